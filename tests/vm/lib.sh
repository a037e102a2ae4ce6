# Helpers for guest tests (sourced). Every test runs against one driver,
# named by RXE_DRIVER: "rust" (our rdma_rxe.ko) or "c" (the in-tree one).
# Both have the module name rdma_rxe; rxe_use_driver makes modprobe find the
# one asked for.

: "${RXE_DRIVER:?RXE_DRIVER must be rust or c}"
: "${RXE_REPO:?}" "${RXE_LOGDIR:?}"
RXE_KO=${RXE_KO:-$RXE_REPO/rdma_rxe.ko}
# PY: what the tests run their pyverbs scripts with ("$PY" SCRIPT ARGS, as
# python3). pyz (tests/vm/pyz.c, built by scripts/test.sh into the log
# directory) has them forked from a Python that imported pyverbs once per
# boot (tests/vm/pyzygote.py, started by suite.sh): under TCG, python3
# takes 3.5 s to start and pyverbs 16 s to import. Without the server,
# pyz runs python3 itself. Tests about processes ending (t_teardown,
# t_destroy_wait, t_netns_exit) run python3 directly.
PY=/usr/bin/python3
[ ! -x "$RXE_LOGDIR/pyz" ] || PY=$RXE_LOGDIR/pyz

# need_pyverbs: fail the test if python3-pyverbs is not installed (a file
# test: an import would cost the 20 s PY saves).
need_pyverbs() {
    [ -f /usr/lib/python3/dist-packages/pyverbs/__init__.py ] || fail "python3-pyverbs missing"
}

fail() { echo "FAIL: $*" >&2; exit 1; }
skip() { echo "SKIP: $*" >&2; exit 4; }
note() { echo "  $*"; }

# expect DESCRIPTION COMMAND...: run COMMAND, fail the test if it fails.
expect() {
    local what=$1; shift
    if ! "$@" > /tmp/expect.out 2>&1; then
        cat /tmp/expect.out >&2
        fail "$what"
    fi
    note "ok: $what"
}

# expect_not DESCRIPTION COMMAND...: fail the test if COMMAND succeeds.
expect_not() {
    local what=$1; shift
    if "$@" > /tmp/expect.out 2>&1; then
        cat /tmp/expect.out >&2
        fail "$what"
    fi
    note "ok: $what"
}

# wait_for SECONDS COMMAND...: retry COMMAND until it succeeds.
wait_for() {
    local t=$1; shift
    local end=$((EPOCHSECONDS + t))
    until "$@" >/dev/null 2>&1; do
        [ "$EPOCHSECONDS" -lt "$end" ] || return 1
        sleep 0.2
    done
}

# Make `modprobe rdma_rxe` load the driver named by $1 (default RXE_DRIVER):
# ours is installed under updates/, which depmod ranks above the in-tree one.
rxe_use_driver() {
    local which=${1:-$RXE_DRIVER} kver moddir orig
    kver=$(uname -r)
    moddir=/lib/modules/$kver
    if [ -L "$moddir" ]; then
        # virtme links this to a directory of relative symlinks into the
        # kernel tree; make a writable copy whose links still resolve.
        orig=$(readlink -f "$moddir")
        rm "$moddir"
        mkdir "$moddir"
        local e name
        for e in "$orig"/*; do
            name=$(basename "$e")
            case $name in
                kernel) cp -rL "$e" "$moddir/kernel" ;;
                modules.builtin|modules.builtin.modinfo|modules.order|build|source)
                    ln -s "$(readlink -f "$e")" "$moddir/$name" ;;
                *) ;; # indexes: depmod writes them anew
            esac
        done
    fi
    rm -rf "$moddir/updates"
    if [ "$which" = rust ]; then
        mkdir -p "$moddir/updates"
        cp "$RXE_KO" "$moddir/updates/rdma_rxe.ko"
    fi
    depmod -a "$kver"
}

# rxe_debug_kernel: is the booted kernel the debug one (KASAN)? Its
# checks cost 3 to 15 times a test's own time under TCG, so a test
# that moves a volume of data moves less there; the production kernel's
# pass (scripts/test.sh) moves the full volume through the same paths.
rxe_debug_kernel() {
    [ -f "${RXE_KDIR:-}/.config" ] && grep -qx 'CONFIG_KASAN=y' "$RXE_KDIR/.config"
}

# Which rdma_rxe is loaded: prints "rust" for ours, "c" for the in-tree
# one; fails if none is. Reads the loaded module, not a file: ours is
# written in Rust, so its functions are in /proc/kallsyms under v0-mangled
# names (_R...) tagged [rdma_rxe], and it is out of tree, so its taint
# flags include O; the C driver has neither. Anything else (one sign
# without the other) prints "unknown".
rxe_loaded_driver() {
    local taint=
    [ -e /sys/module/rdma_rxe/initstate ] || return 1
    [ -r /sys/module/rdma_rxe/taint ] && read -r taint < /sys/module/rdma_rxe/taint
    local rust_syms=false
    grep -qE '[[:space:]]_R[^[:space:]]*[[:space:]]+\[rdma_rxe\]' /proc/kallsyms && rust_syms=true
    case $rust_syms,$taint in
        true,*O*) echo rust ;;
        false,*O*|true,*) echo unknown ;;
        *) echo c ;;
    esac
}

# Is the loaded rdma_rxe (or, if none is loaded, the modprobe-able one)
# the one asked for ($1: rust or c)?
rxe_driver_is() {
    local desc loaded
    if loaded=$(rxe_loaded_driver); then
        [ "$loaded" = "$1" ]
        return
    fi
    desc=$(modinfo -F description rdma_rxe 2>/dev/null)
    case $1 in
        rust) [[ $desc == *Rust* ]] ;;
        c) [[ -n $desc && $desc != *Rust* ]] ;;
        *) return 1 ;;
    esac
}

# Load rdma_rxe and check that the loaded module is the driver asked for
# ($1, default RXE_DRIVER), by its symbols and taint (rxe_loaded_driver).
rxe_load_checked() {
    local which=${1:-$RXE_DRIVER} loaded
    rxe_load || { echo "modprobe rdma_rxe failed" >&2; return 1; }
    loaded=$(rxe_loaded_driver) || { echo "rdma_rxe is not loaded after modprobe" >&2; return 1; }
    [ "$loaded" = "$which" ] || { echo "the loaded rdma_rxe is the $loaded driver, not $which" >&2; return 1; }
    echo "the loaded rdma_rxe is the $loaded driver"
}

rxe_load() { modprobe rdma_rxe; }

# Remove every rxe device, then the module. Fails if the module is still
# loaded afterwards.
rxe_unload() {
    local d
    # No module, no device (and no process started: each costs about a
    # second under TCG).
    [ -e /sys/module/rdma_rxe ] || return 0
    # Every RDMA device (shared mode: all are seen from here) is rxe's.
    for d in /sys/class/infiniband/*; do
        [ ! -e "$d" ] || rdma link del "${d##*/}" 2>/dev/null || true
    done
    modprobe -r rdma_rxe 2>/dev/null || true
    [ ! -e /sys/module/rdma_rxe ]
}

# ip_batch [IP-OPTION...] -- COMMAND...: one `ip` process for several
# commands (`ip -batch`; each process costs about a second under TCG),
# through a file, not a pipe (a pipe forks a subshell).
ip_batch() {
    local opts=()
    while [ "$1" != -- ]; do opts+=("$1"); shift; done
    shift
    printf '%s\n' "$@" > /tmp/rxe-ip.batch
    ip "${opts[@]}" -batch /tmp/rxe-ip.batch
}

# A veth pair veth-a <-> veth-b with fixed MACs (so GUIDs are the same for
# both drivers) and 10.0.0.1/24, 10.0.0.2/24, both up.
veth_pair() {
    ip_batch -- \
        "link add veth-a address 02:00:00:00:00:0a type veth peer name veth-b address 02:00:00:00:00:0b" \
        "addr add 10.0.0.1/24 dev veth-a" "addr add 10.0.0.2/24 dev veth-b" \
        "link set veth-a up" "link set veth-b up"
}

# one_device: the driver loaded and rxe0 on veth-a (10.0.0.1, with veth-b
# at 10.0.0.2 in the same namespace), its port ACTIVE with its IPv4 GID,
# whose index it sets in g0. Fails the test on error.
one_device() {
    rxe_load || fail "modprobe rdma_rxe"
    veth_pair
    expect "add rxe0" rdma link add rxe0 type rxe netdev veth-a
    wait_for 20 port_state_is rxe0 ACTIVE || fail "port not active"
    wait_for 30 gid_index rxe0 ffff:0a00:0001 || fail "no IPv4 GID"
    g0=$(gid_index rxe0 ffff:0a00:0001)
}

# gid_index DEV PATTERN: index of DEV's first GID matching PATTERN, as seen
# from the current namespace. Bash builtins only, in index order, stopping
# at the first match: under TCG every process costs about a second and one
# grep over the 1024 entries over 20 s (a wait for a GID and the set-up of
# two devices took two minutes).
gid_index() {
    local dir=/sys/class/infiniband/$1/ports/1/gids i g
    for ((i = 0; i < 1024; i++)); do
        [ -e "$dir/$i" ] || break
        { read -r g < "$dir/$i"; } 2>/dev/null || continue
        case $g in *"$2"*) echo "$i"; return 0 ;; esac
    done
    return 1
}

# two_namespaces [MTU]: the two-device topology of the data-path tests:
# rxe0 on veth-a (10.0.0.1) here, rxe1 on veth-b (10.0.0.2) in namespace
# "peer", the veth pair at MTU (default 1500), both ports ACTIVE with their
# IPv4 GIDs, whose indices it sets in g0 and g1. Returns 1 on failure.
# Five processes (each costs about a second under TCG; this took 36 s
# with 20): the links by one `ip -batch` per namespace, the waits by
# builtins over sysfs (RDMA devices are seen from every namespace in the
# default shared mode, which no test changes).
two_namespaces() {
    local mtu=${1:-1500}
    ip_batch -- "netns add peer" \
        "link add veth-a address 02:00:00:00:00:0a mtu $mtu type veth peer name veth-b address 02:00:00:00:00:0b mtu $mtu" \
        "link set veth-b netns peer" "addr add 10.0.0.1/24 dev veth-a" \
        "link set lo up" "link set veth-a up" || return 1
    ip_batch -n peer -- "addr add 10.0.0.2/24 dev veth-b" "link set lo up" \
        "link set veth-b up" || return 1
    rdma link add rxe0 type rxe netdev veth-a || return 1
    ip netns exec peer rdma link add rxe1 type rxe netdev veth-b || return 1
    wait_for 20 port_state_is rxe0 ACTIVE || return 1
    wait_for 20 port_state_is rxe1 ACTIVE || return 1
    wait_for 30 gid_index rxe0 ffff:0a00:0001 || return 1
    wait_for 30 gid_index rxe1 ffff:0a00:0002 || return 1
    g0=$(gid_index rxe0 ffff:0a00:0001)
    g1=$(gid_index rxe1 ffff:0a00:0002)
}

# Undoes two_namespaces (whatever part of it was done); rxe1 is named
# from here (shared mode).
two_namespaces_down() {
    rdma link del rxe0 2>/dev/null
    rdma link del rxe1 2>/dev/null
    ip_batch -force -- "netns delete peer" "link del veth-a" 2>/dev/null
    true
}

# port_state_is DEV STATE: is port 1 of DEV in STATE (ACTIVE, DOWN...), by
# its sysfs state ("4: ACTIVE"), with builtins only. (link_state_is asks
# `rdma link show`, what the tests of the port state check.)
port_state_is() {
    local s
    { read -r s < "/sys/class/infiniband/$1/ports/1/state"; } 2>/dev/null || return 1
    [ "${s#*: }" = "$2" ]
}

# Does `rdma link show` show DEV/1 in STATE (ACTIVE or DOWN)?
link_state_is() {
    rdma link show "$1/1" 2>/dev/null | grep -q "state $2 "
}

# Is something listening on UDP 4791 (in the current namespace)?
# $1: "" for any, -4 or -6.
roce_port_listening() {
    ss -Huln ${1:-} sport = :4791 | grep -q ':4791'
}

# same_in_both_drivers STEM WHAT: the outputs a test wrote for each driver
# in this boot ($RXE_LOGDIR/STEM-c.txt and STEM-rust.txt) are identical.
same_in_both_drivers() {
    local c=$RXE_LOGDIR/$1-c.txt r=$RXE_LOGDIR/$1-rust.txt
    [ -s "$c" ] && [ -s "$r" ] || fail "missing $1 output of a driver"
    diff -u "$c" "$r" || fail "$2 differ"
    note "ok: identical $2 ($(wc -l < "$r") lines)"
}

# hw_counter DEV NAME: an rxe device's hardware counter (port 1).
hw_counter() { cat "/sys/class/infiniband/$1/ports/1/hw_counters/$2"; }

# peer_pair NAME SERVER-ARGS -- CLIENT-ARGS: a perftest or ibverbs-utils
# pair, the server in namespace "peer", the client here; both must exit 0
# within 300 s and no buffer check may report invalid data (the client
# retries while the server is not yet listening). With PAIR_LOCAL=1 the
# server runs here too (both ends on one device: the loopback path).
# Outputs in /tmp/pair-NAME.server and .client; increments $port.
peer_pair() {
    local name=$1; shift
    local server=() client=() log ns=(ip netns exec peer)
    log=/tmp/pair-$name
    [ -z "${PAIR_LOCAL:-}" ] || ns=()
    while [ "$1" != -- ]; do server+=("$1"); shift; done; shift
    client=("$@")
    "${ns[@]}" timeout -k 5 300 "${server[@]}" > "$log.server" 2>&1 &
    local spid=$!
    sleep 3
    local ok=0
    for _ in 1 2 3 4 5; do
        timeout -k 5 300 "${client[@]}" > "$log.client" 2>&1 && { ok=1; break; }
        grep -q "Couldn't connect\|Unable to init the socket" "$log.client" || break
        sleep 3
    done
    wait "$spid"; local src=$?
    [ $ok = 1 ] || { tail -5 "$log.client"; fail "$name: client failed"; }
    [ $src = 0 ] || { tail -5 "$log.server"; fail "$name: server exit $src"; }
    ! grep -Eqi "invalid data|data mismatch" "$log.server" "$log.client" ||
        fail "$name: buffer check reported invalid data"
    port=$((port + 1))
}

# rxe_counts: rxe0's sent and received packets, rxe1's, and the
# datagrams dropped for want of their QP (rdma_rxe/rcvd_drop_no_qp), on
# one line.
rxe_counts() {
    echo "$(hw_counter rxe0 sent_pkts) $(hw_counter rxe0 rcvd_pkts)" \
        "$(hw_counter rxe1 sent_pkts) $(hw_counter rxe1 rcvd_pkts)" \
        "$(cat /sys/kernel/debug/rdma_rxe/rcvd_drop_no_qp)"
}

# rxe_books_balance BEFORE: since rxe_counts printed BEFORE, every packet
# rxe0 or rxe1 sent was received by the other, or dropped because its
# QP was gone (a needless probe's duplicate that arrived after the
# transfer's QPs were destroyed), and no more than 16 such.
rxe_books_balance() {
    local s0 r0 s1 r1 n now
    read -r s0 r0 s1 r1 n <<< "$1"
    read -r -a now <<< "$(rxe_counts)"
    local sent0=$((now[0] - s0)) rcvd0=$((now[1] - r0)) sent1=$((now[2] - s1))
    local rcvd1=$((now[3] - r1)) gone=$((now[4] - n))
    [ "$rcvd1" -le "$sent0" ] && [ "$rcvd0" -le "$sent1" ] && [ "$gone" -le 16 ] &&
        [ $((sent0 + sent1)) -eq $((rcvd0 + rcvd1 + gone)) ]
}
