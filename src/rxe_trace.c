// SPDX-License-Identifier: GPL-2.0
/*
 * The rdma_rxe trace events (rxe_trace.h), instantiated here, and one
 * wrapper per event for the Rust side, which cannot expand the trace_*()
 * inlines. Each wrapper tests the event's static key first.
 */
#include <linux/types.h>
#include <rdma/ib_verbs.h>

#define CREATE_TRACE_POINTS
#include "rxe_trace.h"
#include "rxe_glue.h"

void rxe_glue_trace_resp_psn(u32 qpn, u32 psn, u32 expected_psn, u8 verdict, u8 reply,
			     u32 reply_psn)
{
	trace_rxe_resp_psn(qpn, psn, expected_psn, verdict, reply, reply_psn);
}

void rxe_glue_trace_req_go_back(u32 qpn, u32 from_psn, u8 cause)
{
	trace_rxe_req_go_back(qpn, from_psn, cause);
}

void rxe_glue_trace_req_tx(u32 qpn, u32 psn, u8 opcode, u8 retransmit)
{
	trace_rxe_req_tx(qpn, psn, opcode, retransmit);
}

void rxe_glue_trace_comp_ack(u32 qpn, u32 psn, u8 opcode, u8 syndrome, u32 msn)
{
	trace_rxe_comp_ack(qpn, psn, opcode, syndrome, msn);
}

void rxe_glue_trace_retry_exhausted(u32 qpn, u8 rnr)
{
	trace_rxe_retry_exhausted(qpn, rnr);
}
