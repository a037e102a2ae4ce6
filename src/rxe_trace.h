/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Trace events of rdma_rxe's reliability engine, in
 * /sys/kernel/tracing/events/rdma_rxe/: the responder's PSN decision, the
 * requester's packets built and its going back to resend,
 * acknowledgements received, and retry counters running out. Emitted from Rust through rxe_trace.c.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM rdma_rxe

#if !defined(_RXE_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define _RXE_TRACE_H

#include <linux/tracepoint.h>

#define RXE_TRACE_VERDICTS			\
	{ 0, "in_order" },			\
	{ 1, "duplicate" },			\
	{ 2, "out_of_sequence" }

#define RXE_TRACE_REPLIES			\
	{ 0, "none" },				\
	{ 1, "ack" },				\
	{ 2, "nak_psn_seq" },			\
	{ 3, "rnr_nak" },			\
	{ 4, "nak_invalid" },			\
	{ 5, "nak_access" },			\
	{ 6, "nak_operational" },		\
	{ 7, "read_response" },			\
	{ 8, "atomic_ack" }

TRACE_EVENT(rxe_resp_psn,
	TP_PROTO(u32 qpn, u32 psn, u32 expected_psn, u8 verdict, u8 reply, u32 reply_psn),
	TP_ARGS(qpn, psn, expected_psn, verdict, reply, reply_psn),
	TP_STRUCT__entry(
		__field(u32, qpn)
		__field(u32, psn)
		__field(u32, expected_psn)
		__field(u8, verdict)
		__field(u8, reply)
		__field(u32, reply_psn)
	),
	TP_fast_assign(
		__entry->qpn = qpn;
		__entry->psn = psn;
		__entry->expected_psn = expected_psn;
		__entry->verdict = verdict;
		__entry->reply = reply;
		__entry->reply_psn = reply_psn;
	),
	TP_printk("qpn=%u psn=%u expected=%u %s reply=%s reply_psn=%u",
		  __entry->qpn, __entry->psn, __entry->expected_psn,
		  __print_symbolic(__entry->verdict, RXE_TRACE_VERDICTS),
		  __print_symbolic(__entry->reply, RXE_TRACE_REPLIES),
		  __entry->reply_psn)
);

TRACE_EVENT(rxe_req_go_back,
	TP_PROTO(u32 qpn, u32 from_psn, u8 cause),
	TP_ARGS(qpn, from_psn, cause),
	TP_STRUCT__entry(
		__field(u32, qpn)
		__field(u32, from_psn)
		__field(u8, cause)
	),
	TP_fast_assign(
		__entry->qpn = qpn;
		__entry->from_psn = from_psn;
		__entry->cause = cause;
	),
	TP_printk("qpn=%u from_psn=%u cause=%s", __entry->qpn, __entry->from_psn,
		  __print_symbolic(__entry->cause, { 0, "nak" }, { 1, "timeout" },
				   { 2, "rnr" }, { 3, "probe" }, { 4, "rtt_timeout" }))
);

TRACE_EVENT(rxe_req_tx,
	TP_PROTO(u32 qpn, u32 psn, u8 opcode, u8 retransmit),
	TP_ARGS(qpn, psn, opcode, retransmit),
	TP_STRUCT__entry(
		__field(u32, qpn)
		__field(u32, psn)
		__field(u8, opcode)
		__field(u8, retransmit)
		__field(u8, softirq)
	),
	TP_fast_assign(
		__entry->qpn = qpn;
		__entry->psn = psn;
		__entry->opcode = opcode;
		__entry->retransmit = retransmit;
		__entry->softirq = in_serving_softirq() ? 1 : 0;
	),
	TP_printk("qpn=%u psn=%u opcode=0x%02x retransmit=%u ctx=%s", __entry->qpn,
		  __entry->psn, __entry->opcode, __entry->retransmit,
		  __entry->softirq ? "softirq" : "task")
);

TRACE_EVENT(rxe_comp_ack,
	TP_PROTO(u32 qpn, u32 psn, u8 opcode, u8 syndrome, u32 msn),
	TP_ARGS(qpn, psn, opcode, syndrome, msn),
	TP_STRUCT__entry(
		__field(u32, qpn)
		__field(u32, psn)
		__field(u8, opcode)
		__field(u8, syndrome)
		__field(u32, msn)
	),
	TP_fast_assign(
		__entry->qpn = qpn;
		__entry->psn = psn;
		__entry->opcode = opcode;
		__entry->syndrome = syndrome;
		__entry->msn = msn;
	),
	TP_printk("qpn=%u psn=%u opcode=0x%02x syndrome=0x%02x msn=%u",
		  __entry->qpn, __entry->psn, __entry->opcode, __entry->syndrome,
		  __entry->msn)
);

TRACE_EVENT(rxe_retry_exhausted,
	TP_PROTO(u32 qpn, u8 rnr),
	TP_ARGS(qpn, rnr),
	TP_STRUCT__entry(
		__field(u32, qpn)
		__field(u8, rnr)
	),
	TP_fast_assign(
		__entry->qpn = qpn;
		__entry->rnr = rnr;
	),
	TP_printk("qpn=%u %s", __entry->qpn,
		  __entry->rnr ? "rnr_retry" : "retry_cnt")
);

#endif /* _RXE_TRACE_H */

#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE rxe_trace
#include <trace/define_trace.h>
