//===- PccxOps.td - pccx v002 ops --------------------------*- tablegen -*-===//
//
// Attribute names equal the field and flag names of hw/isa/PccxIsa.def; bit
// positions, widths and defined values come only from that table (the
// verifiers and the encoder look them up by name).
//===----------------------------------------------------------------------===//

#ifndef PCCX_OPS_TD
#define PCCX_OPS_TD

include "PccxDialect.td"
include "PccxAttrs.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

// An L2 word address: an integer once allocated, or a buffer symbol.
def Pccx_L2AddrAttr : AnyAttrOf<[I64Attr, FlatSymbolRefAttr]>;
// A host-window word: an integer once placed, or a pccx.host.buffer symbol
// (plus `aux_addr_offset` words).
def Pccx_HostAddrAttr : AnyAttrOf<[I64Attr, FlatSymbolRefAttr]>;

//===----------------------------------------------------------------------===//
// Structure
//===----------------------------------------------------------------------===//

def Pccx_ProgramOp : Pccx_Op<"program", [
    Symbol, SymbolTable, IsolatedFromAbove, NoTerminator, NoRegionArguments,
    SingleBlock]> {
  let summary = "A program: L2 buffers and the segments issued in order";
  let description = [{
    A program is what the runtime issues for one model step (`kind` is
    "decode" or "prefill", or any name for hand-written programs). It holds
    `pccx.buffer` (L2) and `pccx.host.buffer` (host window) declarations
    and `pccx.segment`s; nothing else.
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, OptionalAttr<StrAttr>:$kind);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "$sym_name attr-dict-with-keyword $body";
  let hasVerifier = 1;
}

def Pccx_BufferOp : Pccx_Op<"buffer", [Symbol, HasParent<"ProgramOp">]> {
  let summary = "A named L2 region of `words` 128-bit words";
  let description = [{
    Declares an L2 buffer that instructions name symbolically. `address` is
    absent before L2 allocation and the first word afterwards; the buffer
    must then lie inside the L2 that exists (hw/machine l2_words).
  }];
  let arguments = (ins SymbolNameAttr:$sym_name,
                       ConfinedAttr<I64Attr, [IntPositive]>:$words,
                       OptionalAttr<I64Attr>:$address);
  let assemblyFormat = "$sym_name attr-dict";
  let hasVerifier = 1;
}

def Pccx_HostBufferOp : Pccx_Op<"host.buffer", [Symbol, HasParent<"ProgramOp">]> {
  let summary = "A named region of `words` words of the host window";
  let description = [{
    Host-window space the conversion asked for. Its lifetime is stated as
    two ordinals of the program's allocation events, `alloc` < `free`: the
    placement pass replays the events in order over the window (first fit),
    so buffers whose lifetimes do not overlap share words. `address` is the
    first word once placed.
  }];
  let arguments = (ins SymbolNameAttr:$sym_name,
                       ConfinedAttr<I64Attr, [IntPositive]>:$words,
                       I64Attr:$alloc, I64Attr:$free,
                       OptionalAttr<I64Attr>:$address);
  let assemblyFormat = "$sym_name attr-dict";
  let hasVerifier = 1;
}

def Pccx_SegmentOp : Pccx_Op<"segment", [
    Symbol, HasParent<"ProgramOp">, NoTerminator, NoRegionArguments,
    SingleBlock]> {
  let summary = "A run of instructions and host work issued together";
  let description = [{
    The runtime issues a segment's instructions in order, runs its host ops
    at their position, and waits for completion at the end of the segment.
    `weight_bytes`, when present, is the number of weight-stream bytes the
    segment's GEMV/GEMM instructions consume.
  }];
  let arguments = (ins SymbolNameAttr:$sym_name,
                       OptionalAttr<I64Attr>:$weight_bytes);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "$sym_name attr-dict-with-keyword $body";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Instructions
//===----------------------------------------------------------------------===//

// Every instruction may carry `patches` (#pccx.patch): fields the runtime
// rewrites before issuing the word. Before the machine passes, symbolic
// addresses may carry a word offset (`<field>_offset`) and shapes are
// stated as #pccx.shape; pccx-verify-legality requires every such
// pre-encoding attribute to be gone.
class Pccx_InstOp<string mnemonic, list<Trait> traits = []>
    : Pccx_Op<mnemonic, traits # [HasParent<"SegmentOp">]> {
  let assemblyFormat = "attr-dict";
  let hasVerifier = 1;
}

class Pccx_MatmulOp<string mnemonic, string what>
    : Pccx_InstOp<mnemonic> {
  let summary = what;
  let description = [{
    Multiplies the activation rows at `src_addr` by the next weight record
    of the weight stream and writes the rows to `dest_reg` (semantics in
    docs/isa-semantics.md). `size_ptr_addr` names an fmap_shape entry,
    `shape_ptr_addr` a weight_shape entry.
  }];
  let arguments = (ins Pccx_L2AddrAttr:$dest_reg, Pccx_L2AddrAttr:$src_addr,
                       I64Attr:$size_ptr_addr, I64Attr:$shape_ptr_addr,
                       DefaultValuedAttr<I64Attr, "0">:$parallel_lane,
                       UnitAttr:$findemax, UnitAttr:$accm, UnitAttr:$w_scale,
                       OptionalAttr<Pccx_PatchArrayAttr>:$patches,
                       // The record of the weight plan (emitted with the
                       // word):
                       OptionalAttr<Pccx_WeightRecordAttr>:$weights,
                       // Before encoding:
                       OptionalAttr<Pccx_ShapeAttr>:$weight_shape,
                       OptionalAttr<Pccx_ShapeAttr>:$fmap_shape,
                       OptionalAttr<Pccx_PatchArrayAttr>:$shape_patches,
                       OptionalAttr<I64Attr>:$dest_reg_offset,
                       OptionalAttr<I64Attr>:$src_addr_offset);
}

def Pccx_GemvOp : Pccx_MatmulOp<"gemv", "Matrix x vector (decode projections)">;
def Pccx_GemmOp : Pccx_MatmulOp<"gemm", "Matrix x matrix (prefill projections)">;

def Pccx_MemcpyOp : Pccx_InstOp<"memcpy"> {
  let summary = "Moves words host<->L2 or within L2";
  let description = [{
    `from_device` / `to_device` present mean the host side (1), absent the
    NPU (0). Host addresses (`aux_addr`) are word offsets into the host
    window, or a pccx.host.buffer until placement; `shape_ptr_addr` names an
    fmap_shape entry holding the extent.
  }];
  let arguments = (ins UnitAttr:$from_device, UnitAttr:$to_device,
                       Pccx_L2AddrAttr:$dest_addr, Pccx_L2AddrAttr:$src_addr,
                       Pccx_HostAddrAttr:$aux_addr, I64Attr:$shape_ptr_addr,
                       UnitAttr:$async, OptionalAttr<Pccx_PatchArrayAttr>:$patches,
                       // Before encoding:
                       OptionalAttr<Pccx_ShapeAttr>:$fmap_shape,
                       OptionalAttr<I64Attr>:$dest_addr_offset,
                       OptionalAttr<I64Attr>:$src_addr_offset,
                       OptionalAttr<I64Attr>:$aux_addr_offset);
}

def Pccx_MemsetOp : Pccx_InstOp<"memset"> {
  let summary = "Writes three 16-bit values into a constant-cache entry";
  let arguments = (ins StrAttr:$dest_cache, I64Attr:$dest_addr,
                       I64Attr:$a_value, I64Attr:$b_value, I64Attr:$c_value,
                       OptionalAttr<Pccx_PatchArrayAttr>:$patches);
}

def Pccx_CvoOp : Pccx_InstOp<"cvo"> {
  let summary = "SFU vector function over `length` elements";
  let arguments = (ins StrAttr:$cvo_func, Pccx_L2AddrAttr:$src_addr,
                       Pccx_L2AddrAttr:$dst_addr, I64Attr:$length,
                       UnitAttr:$sub_emax, UnitAttr:$recip_scale,
                       UnitAttr:$accm, UnitAttr:$async,
                       OptionalAttr<Pccx_PatchArrayAttr>:$patches,
                       // Before encoding:
                       OptionalAttr<I64Attr>:$src_addr_offset,
                       OptionalAttr<I64Attr>:$dst_addr_offset);
}

//===----------------------------------------------------------------------===//
// Host work
//===----------------------------------------------------------------------===//

def Pccx_HostKernelOp : Pccx_Op<"host.kernel", [HasParent<"SegmentOp">]> {
  let summary = "Work the ISA cannot express, run by the runtime on the CPU";
  let description = [{
    Runs the named host kernel (hw/abi/HostKernels.def) with `params`, whose
    keys and kinds the ABI fixes; regions are #pccx.region attributes, and
    the kernel's inputs and outputs are its In and Out regions. The runtime
    runs it where it stands; the MEMCPY round trips that feed and drain it
    are explicit instructions around it, and a pccx.host.sync before it
    waits for them.
  }];
  let arguments = (ins StrAttr:$kernel, OptionalAttr<DictionaryAttr>:$params);
  let extraClassDeclaration = [{
    /// The regions of the kernel's In (or Out) parameters, in table order.
    ::llvm::SmallVector<HostRegionAttr> getRegions(bool outputs);
  }];
  let assemblyFormat = "$kernel attr-dict";
  let hasVerifier = 1;
}

def Pccx_HostSyncOp : Pccx_Op<"host.sync", [HasParent<"SegmentOp">]> {
  let summary = "Waits until every issued instruction has completed";
  let assemblyFormat = "attr-dict";
}

#endif // PCCX_OPS_TD
