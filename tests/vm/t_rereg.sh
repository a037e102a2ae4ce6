# rereg_user_mr as the C driver supports it: a new access and a new PD in
# place, keys kept; a new translation EOPNOTSUPP; write access for pages
# pinned read-only EACCES; each checked by a WRITE through the region
# (tests/vm/rereg.c, on one device). Debian's librxe has no rereg_mr, so
# the program issues the uverbs command as a provider would.
. "$(dirname "$0")/lib.sh"

# scripts/test.sh builds it on the host before the boot; build it here
# when run by hand.
bin=$RXE_LOGDIR/rereg
src=$(dirname "$0")/rereg.c
if [ ! -x "$bin" ] || [ "$src" -nt "$bin" ]; then
    gcc -O1 -g -Wall -o "$bin" "$src" -libverbs || fail "cannot build rereg (libibverbs-dev missing?)"
fi
rxe_load || fail "modprobe"
one_device || fail "device set-up"
expect "rereg_user_mr on rxe0" timeout -k 5 300 "$bin" rxe0 "$g0"
sed 's/^/  /' /tmp/expect.out
