// SPDX-License-Identifier: GPL-2.0
/*
 * One-line C wrappers over kernel static inlines and macros for the Rust part
 * of rdma_rxe. See rxe_glue.h.
 */
#include <linux/etherdevice.h>
#include <linux/if_vlan.h>
#include <linux/netdevice.h>
#include <linux/skbuff.h>
#include <linux/cache.h>
#include <linux/vmalloc.h>
#include <net/netns/generic.h>
#include <net/udp_tunnel.h>
#include <linux/highmem.h>
#include <linux/scatterlist.h>
#include <linux/xarray.h>
#include <rdma/ib_umem.h>
#include <rdma/ib_verbs.h>
#include <rdma/uverbs_ioctl.h>

#include "rxe_glue.h"

void *rxe_glue_net_generic(const struct net *net, unsigned int id)
{
	return net_generic(net, id);
}

struct net *rxe_glue_dev_net(const struct net_device *ndev)
{
	return dev_net(ndev);
}

struct net_device *rxe_glue_notifier_dev(void *ptr)
{
	return netdev_notifier_info_to_dev(ptr);
}

void rxe_glue_dev_put(struct net_device *ndev)
{
	dev_put(ndev);
}

bool rxe_glue_is_vlan_dev(const struct net_device *ndev)
{
	return is_vlan_dev(ndev);
}

bool rxe_glue_netdev_active(const struct net_device *ndev)
{
	return ib_get_curr_port_state((struct net_device *)ndev) == IB_PORT_ACTIVE;
}

bool rxe_glue_netdev_up(const struct net_device *ndev)
{
	return netif_get_flags(ndev) & IFF_UP;
}

unsigned int rxe_glue_netdev_mtu(const struct net_device *ndev)
{
	return READ_ONCE(ndev->mtu);
}

unsigned int rxe_glue_netdev_hwaddr(const struct net_device *ndev, u8 *addr, unsigned int len)
{
	unsigned int n = min_t(unsigned int, ndev->addr_len, len);

	memcpy(addr, ndev->dev_addr, n);
	return n;
}

void rxe_glue_eth_random_addr(u8 *addr)
{
	eth_random_addr(addr);
}

unsigned int rxe_glue_num_possible_cpus(void)
{
	return num_possible_cpus();
}

void rxe_glue_mark_name_assigned_by_user(struct ib_device *ibdev)
{
	ib_mark_name_assigned_by_user(ibdev);
}

int rxe_glue_udp_sock_create(struct net *net, bool ipv6, u16 port, struct socket **sockp)
{
	struct udp_port_cfg cfg = {};

	if (ipv6) {
		cfg.family = AF_INET6;
		cfg.ipv6_v6only = 1;
	} else {
		cfg.family = AF_INET;
	}
	cfg.local_udp_port = htons(port);
	return udp_sock_create(net, &cfg, sockp);
}

struct sock *rxe_glue_socket_sk(struct socket *sock)
{
	return sock->sk;
}

void rxe_glue_kfree_skb(struct sk_buff *skb)
{
	kfree_skb(skb);
}

int rxe_glue_no_udata_io(struct ib_udata *udata)
{
	return ib_no_udata_io(udata);
}

void *rxe_glue_vmalloc_user(unsigned long size)
{
	return vmalloc_user(size);
}

unsigned int rxe_glue_cache_line_size(void)
{
	return cache_line_size();
}

struct ib_udata *rxe_glue_attrs_udata(struct uverbs_attr_bundle *attrs)
{
	return attrs ? &attrs->driver_udata : NULL;
}

struct ib_ucontext *rxe_glue_udata_ucontext(struct ib_udata *udata)
{
	return udata ? rdma_udata_to_uverbs_attr_bundle(udata)->context : NULL;
}

int rxe_glue_copy_to_udata(struct ib_udata *udata, const void *src, size_t len)
{
	return ib_copy_to_udata(udata, (void *)src, len);
}

u64 rxe_glue_mmap_get_offset(const struct rdma_user_mmap_entry *entry)
{
	return rdma_user_mmap_get_offset(entry);
}

void rxe_glue_cq_comp_handler(struct ib_cq *cq)
{
	if (cq->comp_handler)
		cq->comp_handler(cq, cq->cq_context);
}

void rxe_glue_cq_err_event(struct ib_cq *cq)
{
	struct ib_event ev = {
		.device = cq->device,
		.element.cq = cq,
		.event = IB_EVENT_CQ_ERR,
	};

	if (cq->event_handler)
		cq->event_handler(&ev, cq->cq_context);
}

struct ib_umem *rxe_glue_umem_get(struct ib_device *dev, unsigned long addr,
				  size_t size, int access)
{
	return ib_umem_get_va(dev, addr, size, access);
}

size_t rxe_glue_umem_num_pages(struct ib_umem *umem)
{
	return ib_umem_num_pages(umem);
}

size_t rxe_glue_umem_pages(struct ib_umem *umem, struct page **pages, size_t max)
{
	struct sg_page_iter iter;
	size_t n = 0;

	for_each_sgtable_page(&umem->sgt_append.sgt, &iter, 0) {
		if (n == max)
			break;
		pages[n++] = sg_page_iter_page(&iter);
	}
	return n;
}

void rxe_glue_xa_init_alloc(struct xarray *xa)
{
	xa_init_flags(xa, XA_FLAGS_ALLOC);
}

int rxe_glue_xa_reserve_cyclic(struct xarray *xa, u32 *id, u32 min, u32 max, u32 *next)
{
	return xa_alloc_cyclic_bh(xa, id, NULL, XA_LIMIT(min, max), next, GFP_KERNEL);
}

int rxe_glue_xa_publish(struct xarray *xa, unsigned long index, void *entry)
{
	return xa_err(xa_store_bh(xa, index, entry, GFP_KERNEL));
}

void *rxe_glue_xa_erase(struct xarray *xa, unsigned long index)
{
	return xa_erase_bh(xa, index);
}

void rxe_glue_xa_lock(struct xarray *xa)
{
	xa_lock_bh(xa);
}

void rxe_glue_xa_unlock(struct xarray *xa)
{
	xa_unlock_bh(xa);
}

void rxe_glue_memcpy_to_page(struct page *page, size_t offset, const void *src, size_t len)
{
	memcpy_to_page(page, offset, src, len);
}

void rxe_glue_memcpy_from_page(void *dst, struct page *page, size_t offset, size_t len)
{
	memcpy_from_page(dst, page, offset, len);
}

int rxe_glue_gid_attr_network_type(const struct ib_gid_attr *attr)
{
	return rdma_gid_attr_network_type(attr);
}
