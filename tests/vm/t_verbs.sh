# The verbs objects through stock librxe (pyverbs), all on one device: user
# contexts and PDs (t_pd.py), CQs (t_cq.py), MRs (t_mr.py), QPs (t_qp.py),
# SRQs (t_srq.py) and AHs (t_ah.py); each script but t_pd.py runs a second
# time ending its process with its objects still open, for the kernel to
# clean up. One test rather than six: setting a device up and tearing it
# down takes most of a minute under TCG.
. "$(dirname "$0")/lib.sh"

need_pyverbs
one_device
for t in pd cq mr qp srq ah; do
    expect "$t" "$PY" "$(dirname "$0")/t_$t.py"
    sed 's/^/    /' /tmp/expect.out
    [ $t = pd ] || expect "$t: process exiting with its objects open" \
        "$PY" "$(dirname "$0")/t_$t.py" --exit-with-open-${t}s
done
expect "device can be removed after contexts close" rdma link del rxe0
