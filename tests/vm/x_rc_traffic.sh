#!/bin/bash
# RC and UD traffic and rdma_cm connections through the stock tools:
# libibverbs' ibv_rc_pingpong, ibv_srq_pingpong and ibv_ud_pingpong,
# perftest's ib_{send,write,read}_{bw,lat}, and librdmacm's rping, udaddy
# and ucmatose, in two topologies:
#   ns/    two devices: rxe1 on veth-b in namespace "peer" (server) and rxe0
#          on veth-a here (client), joined by the veth pair;
#   loop/  one device talking to itself: server and client both on rxe0, the
#          client connecting to rxe0's own address 10.0.0.1.
# Per topology: ibv_rc_pingpong -c at 1, 4096 and 1048576 bytes, with path
# MTU 256 and 4096, with -e (CQ events) and -N (new send API);
# ibv_srq_pingpong -c; ib_send_bw, ib_write_bw, ib_read_bw, ib_send_lat,
# ib_write_lat, ib_read_lat each with -a (2 B to 8 MiB); ib_write_bw -q 16;
# ibv_ud_pingpong -c at 1024 and 4096 bytes (the port MTU) and with -e;
# rping -V (RC through rdma_cm: its connection needs ib_cm's MADs on the
# GSI QP, QP1), udaddy (UD QPs set up through rdma_cm's SIDR exchange on the
# GSI QP) and ucmatose (RC through rdma_cm, the librdmacm way).
# Iteration counts are small (TCG). Every server and client runs under
# timeout(1), so a hung data path fails the test instead of hanging it
# (RXE_TRAFFIC_TIMEOUT seconds per client, default 240; the -a runs get
# RXE_TRAFFIC_TIMEOUT_ALL, default 900). Under TCG the -a runs dominate
# (up to 8 MiB per message at about 1 MB/s); RXE_TRAFFIC_QUICK=1 runs the
# perftest programs at -s 65536 instead of -a. RXE_TRAFFIC_PERFTEST_ARGS
# adds flags to every perftest run (both sides). On a failure the test
# prints both devices' `rdma statistic` counters and the backlog drops.
# The veths get MTU 9000 so that the port's active MTU is 4096 (path MTU
# 4096 packets would not fit a 1500-byte veth).
#
# Named x_ because the whole matrix takes over half an hour per driver under
# TCG; the suite runs subsets through t_rc.sh (RC) and t_ud.sh (UD and
# rdma_cm). Run it by hand with
# RXE_DRIVER=c or rust in the guest:
#   x_rc_traffic.sh [REGEX]    run only the tests whose name matches REGEX,
#                              e.g. 'ns/' or 'loop/ib_read' or 'pingpong'
# Prints "PASS name (N s)" / "FAIL name" per test and a summary; exits 1 if
# any test failed.
set -u
. "$(dirname "$0")/lib.sh"
filter=${1:-.}
T=${RXE_TRAFFIC_TIMEOUT:-240}        # seconds a client may take
TA=${RXE_TRAFFIC_TIMEOUT_ALL:-900}   # the same for the -a (all sizes) runs
all=(-a)
[ -z "${RXE_TRAFFIC_QUICK:-}" ] || all=(-s 65536)
pt_extra=${RXE_TRAFFIC_PERFTEST_ARGS:-}   # more perftest flags, both sides
logs=$RXE_LOGDIR/rc_traffic-$RXE_DRIVER
mkdir -p "$logs"

command -v ibv_rc_pingpong >/dev/null || fail "ibverbs-utils missing"
command -v ib_write_bw >/dev/null || fail "perftest missing"
command -v rping >/dev/null || fail "rdmacm-utils missing"

rxe_load || fail "modprobe rdma_rxe"
expect "two namespaces, rxe0 and rxe1, MTU 9000" two_namespaces 9000
note "IPv4 GID index: rxe0 $g0, rxe1 $g1; active MTU $(ibv_devinfo -d rxe0 | awk '/active_mtu/{print $2}')"

passed=0 failed=0 selected=0 c_known=0
failures=()
port=18600

backlog_drops() { # packets dropped for a full backlog queue, all CPUs
    local d=0 _p x _r
    while read -r _p x _r; do d=$((d + 0x$x)); done < /proc/net/softnet_stat
    echo $d
}

# retry_counters: the client device's retransmission and NAK counters
# (cumulative since the device was added), which tell a slow case's cause.
retry_counters() {
    rdma statistic show link "$cdev/1" 2>/dev/null | tr ' ' '\n' |
        awk '/^(completer_retry_err|rcvd_seq_err|duplicate_request|out_of_seq_request|send_err)$/ { n = $1; next }
             n != "" { printf "%s %s ", n, $1; n = "" }'
}

# seq_errors: out_of_seq_request plus rcvd_seq_err of the client device
# (on loop/ the server's too: one device): a responder that saw a PSN gap,
# a requester that was told of one.
seq_errors() {
    rdma statistic show link "$cdev/1" 2>/dev/null | tr ' ' '\n' |
        awk '/^(out_of_seq_request|rcvd_seq_err)$/ { n = 1; next }
             n { s += $1; n = 0 } END { print s + 0 }'
}

listening() { # NS PORT: a TCP socket listens on PORT in NS (or here)
    if [ -n "$1" ]; then ip netns exec "$1" ss -Htln "sport = :$2"
    else ss -Htln "sport = :$2"; fi | grep -q ":$2"
}

# cm_listening NS PORT: an rdma_cm ID listens on PORT (an rdma_cm port, no
# socket: ss cannot see it). rdma_cm lists the IDs bound to a device, which
# a listener bound to an address is, and the devices are shared by all
# namespaces, so NS does not matter.
cm_listening() {
    rdma resource show cm_id 2>/dev/null |
        grep -Eq "state LISTEN .*src-addr [0-9.]+:$2( |\$)"
}

# run_pair NAME TIMEOUT CHECK SERVER... -- CLIENT...: start the server (in
# $server_ns if set), wait until it listens on $port, run the client, and
# pass if both exit 0 (and, if CHECK is "chk", no side reported invalid
# data). The commands get the port from $port. A caller may set, for the
# call: ready, the function that tells the server listens (default
# listening); listen_port, the port it listens on (default $port);
# client_lines, "N REGEX": the client must print exactly N lines matching
# REGEX; in_order=1: no PSN sequence error on the client device during the
# case (nothing is lost here, so a gap means a packet overtook another).
run_pair() {
    local name=$1 t=$2 chk=$3; shift 3
    local server=() client=()
    while [ "$1" != -- ]; do server+=("$1"); shift; done; shift
    client=("$@")
    [[ $name =~ $filter ]] || return 0
    selected=$((selected + 1))
    local slog="$logs/${name//\//_}.server" clog="$logs/${name//\//_}.client"
    local start=$SECONDS ns_exec=()
    [ -z "$server_ns" ] || ns_exec=(ip netns exec "$server_ns")
    echo "+ ${ns_exec[*]} ${server[*]}" > "$slog"
    echo "+ ${client[*]}" > "$clog"
    "${ns_exec[@]}" timeout -k 5 $((t + 60)) "${server[@]}" >> "$slog" 2>&1 &
    local spid=$! ok=true why= listen_s=- client_s=-
    local lport=${listen_port:-$port}
    if ! wait_for 120 "${ready:-listening}" "$server_ns" "$lport"; then
        ok=false why="server did not listen on $lport"
    else
        listen_s=$((SECONDS - start))
        local seq0; seq0=$(seq_errors)
        timeout -k 5 "$t" "${client[@]}" >> "$clog" 2>&1
        local crc=$?
        client_s=$((SECONDS - start - listen_s))
        [ $crc = 0 ] || { ok=false; why="client exit $crc"; [ $crc = 124 ] && why="client timed out after $t s"; }
    fi
    if $ok; then
        # the server ends once the client is done; give it a while
        local end=$((SECONDS + 60))
        while kill -0 "$spid" 2>/dev/null && [ $SECONDS -lt $end ]; do sleep 0.5; done
    fi
    kill "$spid" 2>/dev/null
    wait "$spid"; local src=$?
    $ok && [ $src != 0 ] && { ok=false; why="server exit $src"; }
    if $ok && [ "$chk" = chk ] && grep -Eqi "invalid data|data mismatch" "$slog" "$clog"; then
        ok=false why="buffer check reported invalid data"
    fi
    if $ok && [ -n "${in_order:-}" ]; then
        local seq1; seq1=$(seq_errors)
        [ "$seq1" = "$seq0" ] || { ok=false; why="$((seq1 - seq0)) PSN sequence errors without loss: packets reordered"; }
    fi
    if $ok && [ -n "${client_lines:-}" ]; then
        local want=${client_lines%% *} re=${client_lines#* } got
        got=$(grep -Ec "$re" "$clog")
        [ "$got" = "$want" ] || { ok=false; why="client printed $got lines matching '$re', not $want"; }
    fi
    port=$((port + 1))
    if ! $ok && [ "$RXE_DRIVER" = c ] && [[ $why == *"timed out"* ]] && [ -z "${c_retried:-}" ]; then
        # The C driver now and then stalls a connection under emulation
        # with 1 vCPU (seen with ibv_rc_pingpong -N: 240 s, completer
        # retries, no progress): its known flake. The reference is
        # retried once, saying so; ours never is.
        echo "C known flake: $name stalled ($why), retried once"
        selected=$((selected - 1))
        # The same commands, so the same port: wait for that one to listen
        # (the port counter has moved on; the first server is gone).
        c_retried=1 listen_port=$lport run_pair "$name" "$t" "$chk" "${server[@]}" -- "${client[@]}"
        return
    fi
    if ! $ok && [ -n "${c_retried:-}" ] && [[ $why == *"timed out"* ]]; then
        # Stalled again: the C driver's failure, recorded, not ours to
        # fail on. Both sides quiet, no retries: a send it never sent
        # (seen on rc_pingpong_s4096 in three runs in a row of one day).
        c_known=$((c_known + 1))
        echo "C known failure: $name stalled again ($why)"
        { rdma statistic show link rxe0/1
          ip netns exec peer rdma statistic show link rxe1/1; } 2>/dev/null |
            sed 's/^/    /'
    elif $ok; then
        passed=$((passed + 1)); echo "PASS $name ($((SECONDS - start)) s; server up $listen_s s, client $client_s s)"
        note "  retries so far: $(retry_counters)"
    else
        failed=$((failed + 1)); failures+=("$name")
        echo "FAIL $name ($((SECONDS - start)) s): $why"
        grep -v "GID:\|address:" "$slog" | tail -12 | sed 's/^/    server: /'
        grep -v "GID:\|address:" "$clog" | tail -12 | sed 's/^/    client: /'
        # the transport counters tell a lost packet from a refused one
        { rdma statistic show link rxe0/1
          ip netns exec peer rdma statistic show link rxe1/1; } 2>/dev/null |
            sed 's/^/    /'
        note "  backlog drops so far (softnet_stat): $(backlog_drops)"
    fi
}

# pp NAME TIMEOUT PROG ARGS...: a libibverbs example (-g for the GID index).
pp() {
    local name=$1 t=$2 prog=$3; shift 3
    run_pair "$topo/$name" "$t" chk \
        "$prog" -d "$sdev" -g "$sgid" -p "$port" "$@" -- \
        "$prog" -d "$cdev" -g "$cgid" -p "$port" "$@" "$host"
}
# pt NAME TIMEOUT PROG ARGS...: a perftest program (-x for the GID index).
pt() {
    local name=$1 t=$2 prog=$3; shift 3
    run_pair "$topo/$name" "$t" nochk \
        "$prog" -d "$sdev" -x "$sgid" -p "$port" -F "$@" $pt_extra -- \
        "$prog" -d "$cdev" -x "$cgid" -p "$port" -F "$@" $pt_extra "$host"
}
# cm NAME TIMEOUT LISTEN_PORT SERVER... -- CLIENT...: a librdmacm example;
# the server listens on LISTEN_PORT through rdma_cm, with no TCP socket.
cm() {
    local name=$1 t=$2 listen_port=$3 ready=cm_listening; shift 3
    run_pair "$topo/$name" "$t" chk "$@"
}

run_topology() {
    pp rc_pingpong_s1         "$T" ibv_rc_pingpong -c -s 1 -n 20
    pp rc_pingpong_s4096      "$T" ibv_rc_pingpong -c -s 4096 -n 20
    pp rc_pingpong_s1M        "$T" ibv_rc_pingpong -c -s 1048576 -n 2
    pp rc_pingpong_mtu256     "$T" ibv_rc_pingpong -c -s 4096 -m 256 -n 10
    pp rc_pingpong_mtu4096    "$T" ibv_rc_pingpong -c -s 16384 -m 4096 -n 10
    pp rc_pingpong_events     "$T" ibv_rc_pingpong -c -s 4096 -e -n 20
    pp rc_pingpong_new_send   "$T" ibv_rc_pingpong -c -s 4096 -N -n 20
    pp srq_pingpong           "$T" ibv_srq_pingpong -c -s 4096 -n 5
    # One READ in the SQ at a time, reposted as soon as it completes: the
    # slot must be free when the completion is seen.
    pt ib_read_lat_s2         "$T" ib_read_lat -s 2 -n 200
    # A stream of 64 KiB WRITEs (64 packets each at MTU 1024): the ACKs
    # come back while a burst is still being sent, and on loop/ (one
    # device, the driver's loopback path) are received on the sending
    # CPU; no packet may overtake another.
    in_order=1 pt ib_write_bw_in_order "$T" ib_write_bw -s 65536 -n 200
    pt ib_send_bw_all         "$TA" ib_send_bw "${all[@]}" -n 5
    pt ib_write_bw_all        "$TA" ib_write_bw "${all[@]}" -n 5
    pt ib_read_bw_all         "$TA" ib_read_bw "${all[@]}" -n 5
    pt ib_send_lat_all        "$TA" ib_send_lat "${all[@]}" -n 5
    pt ib_write_lat_all       "$TA" ib_write_lat "${all[@]}" -n 5
    pt ib_read_lat_all        "$TA" ib_read_lat "${all[@]}" -n 5
    # -u 20: a 4 s ACK timeout. With perftest's default (14, 67 ms) the 16
    # QPs time out under TCG and retransmit hundreds of times, and the C
    # driver then fails a WRITE with status 9 (REM_INV_REQ) in both
    # topologies: a bug of its retransmission path, not what this checks.
    pt ib_write_bw_q16        "$T" ib_write_bw -q 16 -n 5 -u 20
    # UC: SENDs without ACKs; 64 KiB at path MTU 1024 is 64 packets a
    # message, and a lost one would lose the message (lossless here).
    pp uc_pingpong_s4096      "$T" ibv_uc_pingpong -c -s 4096 -n 20
    pp uc_pingpong_s64k       "$T" ibv_uc_pingpong -c -s 65536 -m 1024 -n 10
    pp uc_pingpong_events     "$T" ibv_uc_pingpong -c -s 4096 -e -n 20
    # UD: a send is one packet, up to the port MTU (4096 here).
    pp ud_pingpong            "$T" ibv_ud_pingpong -c -s 1024 -n 100
    pp ud_pingpong_s4096      "$T" ibv_ud_pingpong -c -s 4096 -n 100
    pp ud_pingpong_events     "$T" ibv_ud_pingpong -c -s 1024 -e -n 100
    # rdma_cm: addresses, not devices. Without -P the rping server takes
    # one connection and exits once the client disconnects; -V makes the
    # client compare each echo, -v print it (20 lines, counted). The
    # client's CQ thread ends on the flushed receive of its disconnected
    # QP: a missing flush completion or CQ event hangs it.
    client_lines="20 ^ping data: rdma-ping-" cm rping "$T" "$port" \
        rping -s -a "$host" -p "$port" -C 20 -S 1000 -V -- \
        rping -c -a "$host" -p "$port" -C 20 -S 1000 -V -v
    # udaddy has no port option: its port is 7174 (in rdma_cm's UDP space).
    cm udaddy "$T" 7174 \
        udaddy -b "$host" -C 10 -S 1024 -- \
        udaddy -s "$host" -C 10 -S 1024
    cm ucmatose "$T" "$port" \
        ucmatose -b "$host" -p "$port" -C 10 -- \
        ucmatose -s "$host" -p "$port" -C 10
}

# The BTH AckReq bit as rxe sets it (rxe_req.c): on the last packet of an
# RC or GSI message, never on a UD or UC one. A C peer sees any
# difference; until 2026-12-05 ours sent the GSI QP's packets (ib_cm's
# MADs) without it. When the filter selects an ns/ case that sets up
# through rdma_cm (its MADs go through the GSI QPs), the ns/ cases are
# captured on veth-a (both directions) and checked as ns/wire_ackreq:
# GSI packets (to QP 1) present, every one with AckReq; every UD SEND to
# another QP without.
wire_start() {
    wire_pid=
    [[ ns/rping =~ $filter || ns/udaddy =~ $filter || ns/ucmatose =~ $filter ]] || return 0
    wire_pcap=$logs/ns_wire.pcap
    selected=$((selected + 1))
    command -v tcpdump >/dev/null && command -v tshark >/dev/null || {
        failed=$((failed + 1)); failures+=(ns/wire_ackreq)
        echo "FAIL ns/wire_ackreq: tcpdump or tshark missing"
        return 0
    }
    tcpdump -i veth-a -U -B 8192 -w "$wire_pcap" udp port 4791 2>/dev/null &
    wire_pid=$!
    wait_for 10 test -s "$wire_pcap"
}
# ackreq_bits PCAP FILTER: the AckReq bit (0 or 1) of each packet FILTER selects.
ackreq_bits() {
    tshark -r "$1" -Y "$2" -T fields -e infiniband.bth.a 2>/dev/null
}
wire_check() {
    [ -n "$wire_pid" ] || return 0
    kill -INT "$wire_pid"; wait "$wire_pid"
    local gsi ud gsi_n gsi_bad ud_n ud_bad why=
    gsi=$(ackreq_bits "$wire_pcap" 'infiniband.bth.destqp == 1')
    ud=$(ackreq_bits "$wire_pcap" 'infiniband.bth.destqp != 1 && (infiniband.bth.opcode == 100 || infiniband.bth.opcode == 101)')
    gsi_n=$(grep -c . <<< "$gsi") gsi_bad=$(grep -cx 0 <<< "$gsi")
    ud_n=$(grep -c . <<< "$ud") ud_bad=$(grep -cx 1 <<< "$ud")
    [ "$gsi_n" -gt 0 ] || why="no GSI packet captured"
    [ "$gsi_bad" = 0 ] || why="$gsi_bad of $gsi_n GSI packets without AckReq"
    [ "$ud_bad" = 0 ] || why="${why:+$why; }$ud_bad of $ud_n UD packets with AckReq"
    if [ -z "$why" ]; then
        passed=$((passed + 1))
        echo "PASS ns/wire_ackreq ($gsi_n GSI packets with AckReq, $ud_n UD packets without)"
    else
        failed=$((failed + 1)); failures+=(ns/wire_ackreq)
        echo "FAIL ns/wire_ackreq: $why"
    fi
}

start_all=$SECONDS
topo=ns server_ns=peer sdev=rxe1 sgid=$g1 cdev=rxe0 cgid=$g0 host=10.0.0.2
wire_start
run_topology
wire_check
topo=loop server_ns= sdev=rxe0 sgid=$g0 cdev=rxe0 cgid=$g0 host=10.0.0.1
run_topology

two_namespaces_down

echo "$passed passed, $failed failed, $c_known C known failures of $selected selected ($((SECONDS - start_all)) s, driver $RXE_DRIVER)"
[ ${#failures[@]} = 0 ] || echo "failed: ${failures[*]}"
[ "$selected" -gt 0 ] || fail "no test matches '$filter'"
[ "$failed" = 0 ]
