//! Test doubles for the abi tests: a shared queue buffer over a `Vec` that
//! records every access and can play a hostile user process, and helpers
//! that write WQEs the way librxe does.
#![expect(
    dead_code,
    reason = "each abi test crate that includes this module uses only part of it"
)]

use std::cell::{Cell, RefCell};

use rxe_proto::abi::layout::{queue_hdr, send_wqe, DmaInfo, RawRecvWqe, RawSendWqe, Sge};
use rxe_proto::abi::queue::SharedBuf;

/// A queue buffer in host memory. Every access is bounds-checked against
/// the buffer (a test fails loudly if the code under test goes out of
/// range), and reads of the producer/consumer index can be overridden to
/// simulate a user process scribbling on them.
pub struct VecBuf {
    pub mem: RefCell<Vec<u8>>,
    /// If set, loads of this offset return values from `hostile` in turn.
    pub hostile_off: Cell<Option<usize>>,
    pub hostile: RefCell<Vec<u32>>,
    pub hostile_pos: Cell<usize>,
    /// Count of byte reads per offset (to check "read once").
    pub reads: RefCell<Vec<u32>>,
}

impl VecBuf {
    pub fn new(size: usize) -> Self {
        VecBuf {
            mem: RefCell::new(vec![0; size]),
            hostile_off: Cell::new(None),
            hostile: RefCell::new(Vec::new()),
            hostile_pos: Cell::new(0),
            reads: RefCell::new(vec![0; size]),
        }
    }

    fn check(&self, off: usize, len: usize) {
        let size = self.mem.borrow().len();
        assert!(
            off.checked_add(len).is_some_and(|e| e <= size),
            "access out of range: off {off} len {len} size {size}"
        );
    }

    pub fn set_u32(&self, off: usize, v: u32) {
        self.check(off, 4);
        self.mem.borrow_mut()[off..off + 4].copy_from_slice(&v.to_le_bytes());
    }

    pub fn get_u32(&self, off: usize) -> u32 {
        self.check(off, 4);
        u32::from_le_bytes(self.mem.borrow()[off..off + 4].try_into().unwrap())
    }

    pub fn bytes(&self, off: usize, len: usize) -> Vec<u8> {
        self.check(off, len);
        self.mem.borrow()[off..off + len].to_vec()
    }

    pub fn set_bytes(&self, off: usize, src: &[u8]) {
        self.check(off, src.len());
        self.mem.borrow_mut()[off..off + src.len()].copy_from_slice(src);
    }

    /// The user producer index (as librxe would store it).
    pub fn set_producer(&self, v: u32) {
        self.set_u32(queue_hdr::PRODUCER_INDEX, v);
    }

    /// The user consumer index.
    pub fn set_consumer(&self, v: u32) {
        self.set_u32(queue_hdr::CONSUMER_INDEX, v);
    }

    pub fn max_reads(&self) -> u32 {
        *self.reads.borrow().iter().max().unwrap_or(&0)
    }

    pub fn clear_reads(&self) {
        self.reads.borrow_mut().iter_mut().for_each(|r| *r = 0);
    }
}

impl SharedBuf for VecBuf {
    fn size(&self) -> usize {
        self.mem.borrow().len()
    }

    fn load_acquire_u32(&self, off: usize) -> u32 {
        if self.hostile_off.get() == Some(off) {
            let h = self.hostile.borrow();
            if !h.is_empty() {
                let i = self.hostile_pos.get();
                self.hostile_pos.set(i + 1);
                return h[i % h.len()];
            }
        }
        self.get_u32(off)
    }

    fn store_release_u32(&self, off: usize, v: u32) {
        self.set_u32(off, v);
    }

    fn store_u32(&self, off: usize, v: u32) {
        self.set_u32(off, v);
    }

    fn read_bytes(&self, off: usize, dst: &mut [u8]) {
        self.check(off, dst.len());
        dst.copy_from_slice(&self.mem.borrow()[off..off + dst.len()]);
        for r in &mut self.reads.borrow_mut()[off..off + dst.len()] {
            *r += 1;
        }
    }

    fn write_bytes(&self, off: usize, src: &[u8]) {
        self.set_bytes(off, src);
    }

    fn zero(&self, off: usize, len: usize) {
        self.check(off, len);
        self.mem.borrow_mut()[off..off + len].fill(0);
    }
}

/// Writes a send WQE into `slot` the way librxe's legacy post path does:
/// header with `dma.length = resid = sum`, then SGEs or inline bytes.
pub fn write_send_wqe(slot: &mut [u8], hdr: &RawSendWqe, sges: &[Sge], inline: Option<&[u8]>) {
    let mut h = *hdr;
    match inline {
        Some(data) => {
            h.dma = DmaInfo {
                length: data.len() as u32,
                resid: data.len() as u32,
                num_sge: 1,
                ..Default::default()
            };
            slot[send_wqe::DATA..send_wqe::DATA + data.len()].copy_from_slice(data);
        }
        None => {
            let sum: u32 = sges.iter().fold(0u32, |a, s| a.wrapping_add(s.length));
            h.dma = DmaInfo {
                length: sum,
                resid: sum,
                num_sge: sges.len() as u32,
                ..Default::default()
            };
            for (i, s) in sges.iter().enumerate() {
                s.encode(&mut slot[send_wqe::DATA + 16 * i..]).unwrap();
            }
        }
    }
    h.encode(slot).unwrap();
}

/// Writes a receive WQE the way librxe does.
pub fn write_recv_wqe(slot: &mut [u8], wr_id: u64, sges: &[Sge]) {
    let sum: u32 = sges.iter().fold(0u32, |a, s| a.wrapping_add(s.length));
    let h = RawRecvWqe {
        wr_id,
        dma: DmaInfo {
            length: sum,
            resid: sum,
            num_sge: sges.len() as u32,
            ..Default::default()
        },
        ..Default::default()
    };
    h.encode(slot).unwrap();
    for (i, s) in sges.iter().enumerate() {
        s.encode(&mut slot[40 + 16 * i..]).unwrap();
    }
}
