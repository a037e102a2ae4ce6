/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Input to bindgen for rdma_rxe: the kernel headers whose types and exported
 * functions the driver uses, plus the C glue's prototypes. The generated
 * file is src/generated/bindings.rs, wrapped by src/sys/bindings.rs.
 */
#include <linux/crc32.h>
#include <linux/netdevice.h>
#include <linux/skbuff.h>
#include <linux/vmalloc.h>
#include <net/net_namespace.h>
#include <net/udp_tunnel.h>
#include <linux/xarray.h>
#include <rdma/ib_mad.h>
#include <rdma/ib_umem.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_netlink.h>
#include <rdma/uverbs_ioctl.h>
#include <uapi/rdma/ib_user_ioctl_verbs.h>
#include <uapi/rdma/rdma_user_rxe.h>
#include "rxe_glue.h"
#include "rxe_net.h"
#include "rxe_odp.h"

/* bindgen cannot evaluate these macros: give them constant values. */
const u16 RXE_GLUE_ROCE_V2_UDP_DPORT = ROCE_V2_UDP_DPORT;
const u32 RXE_GLUE_IB_MGMT_MAD_SIZE = IB_MGMT_MAD_SIZE;
const u16 RXE_GLUE_IB_DEFAULT_PKEY_FULL = IB_DEFAULT_PKEY_FULL;
const u32 RXE_GLUE_RXE_UVERBS_ABI_VERSION = 2;
const u8 RXE_GLUE_RDMA_NODE_IB_CA = RDMA_NODE_IB_CA;
const int RXE_GLUE_IB_DEVICE_MODIFY_SYS_IMAGE_GUID = IB_DEVICE_MODIFY_SYS_IMAGE_GUID;
const int RXE_GLUE_IB_DEVICE_MODIFY_NODE_DESC = IB_DEVICE_MODIFY_NODE_DESC;
const int RXE_GLUE_IB_PORT_RESET_QKEY_CNTR = IB_PORT_RESET_QKEY_CNTR;
const unsigned long RXE_GLUE_RDMA_HW_STATS_DEFAULT_LIFESPAN = RDMA_HW_STATS_DEFAULT_LIFESPAN;
