#!/usr/bin/env bash
# Compares the RoCEv2 headers our driver sends with the C driver's, from
# the captures of a scripts/interop.sh run with RXE_INTEROP_CAPTURE=1 and
# both pairs (c:rust and rust:c): for each case, what the client sent when
# it was ours against what it sent when it was C, and the same for the
# server. A packet is reduced to its header signature: BTH opcode, SE, M,
# pad count, TVer, P_Key, AckReq, the AETH syndrome, the IP DSCP/TTL/DF
# and whether the UDP checksum is zero; PSNs, QPNs, keys, addresses and
# lengths differ by nature and are left out. Prints, per case and side,
# the signatures only one driver sent (with counts), and the malformed
# packets tshark finds. Exits non-zero if a capture has a malformed packet.
#
#   scripts/wire-compare.sh LOGDIR
set -uo pipefail
logdir=$1
fields=(-e infiniband.bth.opcode -e infiniband.bth.se -e infiniband.bth.m
    -e infiniband.bth.padcnt -e infiniband.bth.tver -e infiniband.bth.p_key
    -e infiniband.bth.a -e infiniband.aeth.syndrome -e ip.dsfield.dscp -e ip.ttl
    -e ip.flags.df -e udp.checksum)

# signatures PCAP SRC: "count signature" lines of what SRC sent.
signatures() {
    tshark -r "$1" -Y "ip.src == $2 && infiniband.bth" -T fields -E separator=' ' \
        "${fields[@]}" 2> /dev/null |
        awk '{ $NF = ($NF == "0x0000" || $NF == "0") ? "csum0" : "csum"; print }' |
        sort | uniq -c | awk '{ c = $1; $1 = ""; sub(/^ /, ""); print c "\t" $0 }'
}
# malformed PCAP: the packets tshark finds malformed in their Ethernet, IP,
# UDP or InfiniBand headers. Its heuristic dissectors of InfiniBand
# payloads (RPC-over-RDMA, an ethertype...) try every SEND's data and call
# a 2-byte one "malformed" for either driver alike (4092 of them in one
# capture of the whole matrix, every one in "infiniband:rpcordma" or
# "infiniband:ethertype:idp"): a frame whose error is in a layer below the
# payload is what counts here.
malformed() {
    tshark -r "$1" -Y "_ws.malformed || _ws.expert.severity >= \"Error\"" \
        -T fields -e frame.protocols 2> /dev/null | grep -c -v -E ':infiniband:[^_]'
}

# driver_ip DRIVER: the address of the guest that ran DRIVER ("side N:
# DRIVER driver, rxe0 on NIC (IP)" in its log).
driver_ip() {
    sed -n "s/.*side [12]: $1 driver, rxe0 on [^ ]* (\([0-9.]*\)).*/\1/p" \
        "$logdir"/guest-boot-*-side[12].log | head -1
}
ours_ip=$(driver_ip rust) c_ip=$(driver_ip c)
[ -n "$ours_ip" ] && [ -n "$c_ip" ] && [ "$ours_ip" != "$c_ip" ] ||
    { echo "wire-compare: no side of each driver in $logdir/guest-boot-*-side[12].log"; exit 1; }

bad=0
printf 'signature: opcode se m pad tver pkey ackreq aeth dscp ttl df udp-checksum\n'
for ours_pcap in "$logdir"/c-rust/server-*.pcap; do
    [ -e "$ours_pcap" ] || { echo "no captures in $logdir/c-rust"; exit 1; }
    case_=${ours_pcap##*/server-}; case_=${case_%.pcap}
    c_pcap=$logdir/rust-c/server-$case_.pcap
    [ -e "$c_pcap" ] || { echo "$case_: no rust-c capture"; continue; }
    for p in "$ours_pcap" "$c_pcap"; do
        m=$(malformed "$p")
        if [ "$m" != 0 ]; then
            echo "$case_: $m malformed packet(s) in $p"
            bad=1
        fi
    done
    # One boot serves both pairs, the sides swapping roles: in c-rust our
    # client sent from ours_ip, in rust-c our server did.
    for side in client server; do
        if [ $side = client ]; then
            ours=$(signatures "$ours_pcap" "$ours_ip"); c=$(signatures "$c_pcap" "$c_ip")
        else
            ours=$(signatures "$c_pcap" "$ours_ip"); c=$(signatures "$ours_pcap" "$c_ip")
        fi
        only_ours=$(comm -23 <(cut -f2 <<< "$ours" | sort) <(cut -f2 <<< "$c" | sort))
        only_c=$(comm -13 <(cut -f2 <<< "$ours" | sort) <(cut -f2 <<< "$c" | sort))
        if [ -z "$only_ours" ] && [ -z "$only_c" ]; then
            echo "$case_ $side: same signatures ($(wc -l <<< "$ours") kinds;" \
                "ours $(awk -F'\t' '{ s += $1 } END { print s + 0 }' <<< "$ours") packets," \
                "C $(awk -F'\t' '{ s += $1 } END { print s + 0 }' <<< "$c"))"
        else
            echo "$case_ $side: signatures differ"
            while read -r s; do
                [ -n "$s" ] && echo "    only ours ($(grep -F -- "$s" <<< "$ours" | cut -f1 | head -1)x): $s"
            done <<< "$only_ours"
            while read -r s; do
                [ -n "$s" ] && echo "    only C    ($(grep -F -- "$s" <<< "$c" | cut -f1 | head -1)x): $s"
            done <<< "$only_c"
        fi
    done
done
exit $bad
