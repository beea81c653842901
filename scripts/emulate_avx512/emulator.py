"""Runs a process's AVX-512 functions in an emulated CPU (BochsCPU, through
the bochscpu-python wheel), the rest natively.

trap.c catches the SIGILL of the first AVX-512 instruction a function
meets and calls `Emulator.resume` with the thread's registers; the
emulator runs from there until the code returns to a caller outside the
AVX-512 functions (an address outside `ranges`, with the stack above where
the trap found it), and hands the registers back.

Memory: the guest's virtual addresses are the process's own.  Each GiB of
the process's address space that is in use gets a 1 GiB page, backed by
the process's pages as the emulator touches them; a GiB that is not yet
mapped raises a page fault in the guest, whose handler (a `hlt` on its
own stack) stops the emulator, which maps that GiB and goes on from the
faulting instruction.  The page tables and the fault handler's tables
(GDT, TSS, IDT) live in host pages at the bottom of guest-physical memory,
mapped high in the guest's address space where no user address reaches.
"""
import bisect
import ctypes
import struct
import sys
import threading

import bochscpu
import bochscpu.cpu
import bochscpu.memory

GIB = 1 << 30
PAGE = 4096
TOP_HALF = 1 << 47          # user addresses are below this
SYSTEM_VA = 0xFFFFFF8000000000   # PML4 slot 511: the system pages
PAGE_FAULT = 14

# Guest-physical pages of the system area (under 1 GiB, which PML4 slot
# 511 maps at SYSTEM_VA): the tables, then the page tables from TABLES on.
GDT, TSS, IDT, HANDLER, FAULT_STACK, TABLES = (
    0x1000, 0x2000, 0x3000, 0x4000, 0x5000, 0x10000)
CODE_SEL, DATA_SEL, TSS_SEL = 0x08, 0x10, 0x18


class Regs(ctypes.Structure):
    """trap.c's struct trap_regs."""
    _fields_ = [("gpr", ctypes.c_uint64 * 16), ("rip", ctypes.c_uint64),
                ("rflags", ctypes.c_uint64), ("fs_base", ctypes.c_uint64),
                ("mxcsr", ctypes.c_uint64),
                ("ymm", (ctypes.c_uint64 * 4) * 16)]


GPR = ["rax", "rcx", "rdx", "rbx", "rsp", "rbp", "rsi", "rdi",
       "r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15"]
TRAP_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(Regs))


def segment(selector, attr, base=0, limit=0xFFFFFFFF):
    s = bochscpu.Segment()
    s.selector, s.attr, s.base, s.limit = selector, attr, base, limit
    s.present = True
    return s


def table(base, limit):
    t = bochscpu.GlobalSegment()
    t.base, t.limit = base, limit
    return t


class Emulator:
    def __init__(self, ranges):
        self.ranges = sorted(ranges)
        self.starts = [a for a, _ in self.ranges]
        self.lock = threading.Lock()
        self.entries = 0
        self.host = {}               # system page gpa -> host address
        self.next_table = TABLES
        self.chunks = []             # slot -> GiB of the address space
        self.slot = {}               # GiB -> slot
        self.pdpt = {}               # PML4 index -> PDPT gpa
        self.sess = bochscpu.Session()
        self.sess.missing_page_handler = self.missing_page
        self.pml4 = self.system_page(self.take_table())
        self.map_system()
        self.template = self.base_state()
        hook = bochscpu.Hook()
        hook.ucnear_branch = self.on_branch
        hook.exception = self.on_exception
        hook.far_branch = self.on_far_branch
        hook.hlt = self.on_hlt
        self.hooks = [hook]

    # -- guest memory --------------------------------------------------

    def take_table(self):
        gpa = self.next_table
        self.next_table += PAGE
        return gpa

    def system_page(self, gpa):
        if gpa not in self.host:
            hva = bochscpu.memory.allocate_host_page()
            ctypes.memset(hva, 0, PAGE)
            bochscpu.memory.page_insert(gpa, hva)
            self.host[gpa] = hva
        return gpa

    def put(self, gpa, offset, data):
        ctypes.memmove(self.host[gpa] + offset, data, len(data))

    def entry(self, table_gpa, index, value):
        self.put(table_gpa, 8 * index, struct.pack("<Q", value))

    def pdpt_of(self, i4):
        if i4 not in self.pdpt:
            self.pdpt[i4] = self.system_page(self.take_table())
            self.entry(self.pml4, i4, self.pdpt[i4] | 0x7)
        return self.pdpt[i4]

    def map_gib(self, gib):
        """Maps a GiB of the address space (present, writable, user)."""
        if gib in self.slot:
            return
        if len(self.chunks) + 2 >= 1 << 10:      # 40 physical address bits
            raise MemoryError("the emulator's physical space is full")
        self.slot[gib] = len(self.chunks)
        self.chunks.append(gib)
        self.entry(self.pdpt_of(gib >> 9), gib & 511,
                   (len(self.chunks) * GIB) | 0x87)

    def missing_page(self, gpa):
        slot = gpa // GIB - 1
        if not 0 <= slot < len(self.chunks):
            raise RuntimeError(f"no guest-physical page at {gpa:#x}")
        hva = (self.chunks[slot] << 30) | (gpa % GIB)
        bochscpu.memory.page_insert(gpa & -PAGE, hva & -PAGE)

    def map_system(self):
        """The system area: a 1 GiB page at SYSTEM_VA over guest-physical
        0-1 GiB, holding a GDT (64-bit code, data, TSS), a TSS whose
        first interrupt stack is FAULT_STACK, and an IDT that sends every
        vector to a `hlt` on that stack."""
        for gpa in (GDT, TSS, IDT, HANDLER, FAULT_STACK):
            self.system_page(gpa)
        self.entry(self.pdpt_of(511), 0, 0 | 0x83)
        tss_va = SYSTEM_VA + TSS
        tss_low = (0x67 | (tss_va & 0xFFFF) << 16 | ((tss_va >> 16) & 0xFF)
                   << 32 | 0x89 << 40 | ((tss_va >> 24) & 0xFF) << 56)
        self.put(GDT, 0, struct.pack(
            "<5Q", 0, 0x00AF9A000000FFFF, 0x00CF92000000FFFF, tss_low,
            tss_va >> 32))
        self.put(TSS, 0x24, struct.pack("<Q", SYSTEM_VA + FAULT_STACK + PAGE))
        handler = SYSTEM_VA + HANDLER
        gate = struct.pack(
            "<HHBBHII", handler & 0xFFFF, CODE_SEL, 1, 0x8E,
            (handler >> 16) & 0xFFFF, handler >> 32, 0)
        self.put(IDT, 0, gate * 256)
        self.put(HANDLER, 0, b"\xf4" * 16)

    def base_state(self):
        st = bochscpu.State()
        bochscpu.cpu.set_long_mode(st)
        cr0 = bochscpu.cpu.ControlRegister(st.cr0)
        cr0.MP, cr0.EM = True, False
        cr4 = bochscpu.cpu.ControlRegister(st.cr4)
        cr4.OSFXSR = cr4.OSXMMEXCPT = cr4.OSXSAVE = True
        st.cr0, st.cr4 = int(cr0), int(cr4)
        st.xcr0 = 0xE7          # x87, SSE, AVX, opmask, ZMM_Hi256, Hi16_ZMM
        st.cr3 = self.pml4
        st.cs = segment(CODE_SEL, 0xAF9B)       # 64-bit code, ring 0
        for name in ("ds", "es", "ss", "gs"):
            setattr(st, name, segment(DATA_SEL if name == "ss" else 0,
                                      0xCF93))
        st.gdtr = table(SYSTEM_VA + GDT, 5 * 8 - 1)
        st.idtr = table(SYSTEM_VA + IDT, 256 * 16 - 1)
        st.tr = segment(TSS_SEL, 0x8B, SYSTEM_VA + TSS, 0x67)
        return st

    # -- hooks ---------------------------------------------------------

    def in_ranges(self, addr):
        i = bisect.bisect_right(self.starts, addr) - 1
        return i >= 0 and addr < self.ranges[i][1]

    def on_branch(self, sess, cpu_id, what, branch_ip, new_ip):
        if not self.in_ranges(new_ip) and sess.cpu.rsp > self.trap_rsp:
            sess.stop()

    def on_exception(self, sess, cpu_id, vector, error_code):
        if vector == PAGE_FAULT and self.fault is None:
            self.fault = sess.cpu.cr2
        else:
            self.error = (f"exception {vector} (error code {error_code}) "
                          f"near {sess.cpu.rip:#x}")
            sess.stop()

    def on_far_branch(self, sess, *args):
        self.error = f"a far branch (a system call?) near {sess.cpu.rip:#x}"
        sess.stop()

    def on_hlt(self, sess, cpu_id):
        sess.stop()

    # -- a trap --------------------------------------------------------

    def resume(self, p):
        """trap.c's callback: 0 with the registers at the return, or 1."""
        with self.lock:
            try:
                return self.run(p.contents)
            except BaseException as e:  # never unwinds into the handler
                print(f"AVX-512 emulation failed: {e!r}", file=sys.stderr)
                return 1

    def run(self, r):
        if not self.in_ranges(r.rip):
            print(f"SIGILL outside the AVX-512 functions at {where(r.rip)}",
                  file=sys.stderr)
            return 1
        st = self.template
        for i, name in enumerate(GPR):
            setattr(st, name, r.gpr[i])
        st.rip, st.rflags, st.mxcsr = r.rip, r.rflags, r.mxcsr
        st.fs = segment(0, 0xCF93, r.fs_base)
        zmm = st.zmm
        for i in range(32):
            zmm[i].q = list(r.ymm[i]) + [0] * 4 if i < 16 else [0] * 8
        st.zmm = zmm
        self.map_gib(r.gpr[4] >> 30)     # the stack
        self.map_gib(r.rip >> 30)
        self.trap_rsp = r.gpr[4]
        self.error = None
        self.sess.cpu.state = st
        while True:
            self.fault = None
            self.sess.run(self.hooks)
            if self.error is not None:
                print(f"AVX-512 emulation: {self.error}", file=sys.stderr)
                return 1
            if self.fault is None:
                break
            self.after_fault(self.fault)
        out = self.sess.cpu.state
        for i, name in enumerate(GPR):
            r.gpr[i] = getattr(out, name)
        r.rip, r.rflags, r.mxcsr = out.rip, out.rflags, out.mxcsr
        zmm = out.zmm
        for i in range(16):
            r.ymm[i][:] = zmm[i].q[:4]
        self.entries += 1
        return 0

    def after_fault(self, addr):
        """Maps the GiB of `addr` and restarts the faulting instruction
        from the frame the fault pushed: error code, RIP, CS, RFLAGS,
        RSP, SS."""
        if addr >= TOP_HALF or (addr >> 30) in self.slot:
            raise RuntimeError(f"page fault at {addr:#x}: not mapped in "
                               "the process either")
        self.map_gib(addr >> 30)
        frame = ctypes.string_at(self.host[FAULT_STACK] + PAGE - 48, 48)
        _, rip, _, rflags, rsp, _ = struct.unpack("<6Q", frame)
        st = self.sess.cpu.state
        st.rip, st.rflags, st.rsp = rip, rflags, rsp
        st.cs = self.template.cs
        st.ss = self.template.ss
        self.sess.cpu.state = st


def where(addr):
    """`addr` as file+offset, from /proc/self/maps."""
    with open("/proc/self/maps") as f:
        for line in f:
            fields = line.split()
            lo, hi = (int(x, 16) for x in fields[0].split("-"))
            if lo <= addr < hi:
                name = fields[5] if len(fields) > 5 else "anonymous"
                return f"{name}+{addr - lo + int(fields[2], 16):#x}"
    return f"{addr:#x}"


def install(emulator, trap_library):
    """Installs trap.c's handler (from the built `trap_library`) with
    `emulator.resume` as its callback."""
    lib = ctypes.CDLL(trap_library)
    callback = TRAP_FN(emulator.resume)
    lib.trap_install.argtypes = [TRAP_FN, ctypes.c_size_t]
    lib.trap_thread_init.argtypes = [ctypes.c_size_t]
    if lib.trap_install(callback, 64 << 20) != 0:
        raise OSError("could not install the SIGILL handler")
    emulator.keep = (lib, callback)
    return lib
