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
# Debian's rust-web-clippy: the clippy that matches /usr/bin/rustc (rustup's
# does not).
CLIPPY_DRIVER ?= /usr/bin/clippy-driver
export PATH := $(LLVM_BIN):$(PATH)

KMAKE = $(MAKE) -C $(KDIR) M=$(CURDIR) LLVM=1 RUSTC=$(RUSTC) BINDGEN=$(BINDGEN) \
	CONFIG_RDMA_RXE_RS=m

all: modules

modules:
	$(KMAKE) W=0 modules

# The module checked by clippy with the kernel tree's .clippy.toml and lint
# set (its warnings are errors, as CONFIG_WERROR makes them). Deleting the
# object forces the check; the plain build after it puts back the object
# and .ko that rustc makes, which the command change rebuilds.
clippy:
	rm -f src/rxe_main.o
	$(KMAKE) W=0 CLIPPY=1 CLIPPY_DRIVER=$(CLIPPY_DRIVER) modules
	$(KMAKE) W=0 modules

clean:
	$(KMAKE) clean
	rm -rf src/generated

host-test:
	cd host && cargo test

.PHONY: all modules clippy clean host-test
