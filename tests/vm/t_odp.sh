# On-demand paging over RC through stock librxe, between two devices in two
# namespaces (tests/vm/t_odp.py: the ODP capabilities, the data-integrity
# suite on regions registered on demand, mappings that change under them,
# an unmapped page, implicit ODP refused), then advise_mr
# (tests/vm/advise.c: Debian's librxe has no ibv_advise_mr, so the program
# issues the uverbs method as a provider would). Needs a kernel with
# CONFIG_INFINIBAND_ON_DEMAND_PAGING (both of ours have it).
. "$(dirname "$0")/lib.sh"

need_pyverbs
# ib_umem_odp_get exists only with CONFIG_INFINIBAND_ON_DEMAND_PAGING.
grep -q ' ib_umem_odp_get$' /proc/kallsyms ||
    fail "the kernel has no CONFIG_INFINIBAND_ON_DEMAND_PAGING"
# scripts/test.sh builds it on the host before the boot; build it here
# when run by hand.
bin=$RXE_LOGDIR/advise
src=$(dirname "$0")/advise.c
if [ ! -x "$bin" ] || [ "$src" -nt "$bin" ]; then
    gcc -O1 -g -Wall -o "$bin" "$src" -libverbs || fail "cannot build advise (libibverbs-dev missing?)"
fi
rxe_load || fail "modprobe"
two_namespaces || fail "two-namespace set-up"
start=$SECONDS
if [ "$RXE_DRIVER" = c ]; then
    # The C driver corrupts data on ODP regions (the integrity part: bytes
    # outside a SEND's target change): recorded, not hidden, per part.
    timeout -k 5 600 "$PY" "$(dirname "$0")/t_odp.py" "$RXE_DRIVER" rxe0 "$g0" rxe1 "$g1" \
        > /tmp/odp.out 2>&1
    sed -e 's/^FAILED: /C known failure: /' -e 's/^/  /' /tmp/odp.out
else
    expect "on-demand paging rxe0 to rxe1" timeout -k 5 600 "$PY" "$(dirname "$0")/t_odp.py" "$RXE_DRIVER" rxe0 "$g0" rxe1 "$g1"
    sed 's/^/  /' /tmp/expect.out
fi
expect "advise_mr on rxe0" timeout -k 5 300 "$bin" "$RXE_DRIVER" rxe0
sed 's/^/  /' /tmp/expect.out
note "($((SECONDS - start)) s)"
two_namespaces_down
