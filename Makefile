# SPDX-License-Identifier: GPL-2.0
#
# Out-of-tree build of rdma_rxe.ko. KDIR defaults to the cached test kernel
# that scripts/build-kernel.sh builds; any CONFIG_RUST=y kernel build tree
# built with the same rustc works. In-tree, Kbuild and Kconfig are used as is.

RXE_CACHE ?= /opt/rxe-rs
KDIR ?= $(RXE_CACHE)/kernel
RUSTC ?= /usr/bin/rustc
BINDGEN ?= $(RXE_CACHE)/bindgen/bin/bindgen
LLVM_BIN ?= /usr/lib/llvm-19/bin
export PATH := $(LLVM_BIN):$(PATH)

KMAKE = $(MAKE) -C $(KDIR) M=$(CURDIR) LLVM=1 RUSTC=$(RUSTC) BINDGEN=$(BINDGEN) \
	CONFIG_RDMA_RXE_RS=m

all: modules

modules:
	$(KMAKE) W=0 modules

clean:
	$(KMAKE) clean
	rm -rf src/generated

host-test:
	cd host && cargo test

.PHONY: all modules clean host-test
