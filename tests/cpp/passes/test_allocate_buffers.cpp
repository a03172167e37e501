// AllocateBuffers alone, on the output of fuse_instructions: the offset of every tile buffer
// (largest first, reusing the bytes of dead tiles), the memory spaces one after another, the
// machine's alignment, and the capacity check.
#include "pass_test_util.h"
#include "passes/allocate_buffers.h"

using namespace pypto;
using namespace pypto::pass_test;

namespace {

BlockGraph Allocate(Function fn, const std::string& machine = "cpu") {
  CompileOptions o;
  o.machine = machine;
  BlockGraph g = Through(std::move(fn), "fuse_instructions", o).block_graph;
  PassContext ctx(o);
  AllocateBuffers(g, ctx);
  return g;
}

// "name@offset" per buffer ("name@-" when it has none).
std::vector<std::string> Offsets(const Kernel& k) {
  std::vector<std::string> v;
  for (const TileBuf& b : k.bufs) v.push_back(b.name + "@" + (b.offset < 0 ? "-" : std::to_string(b.offset)));
  return v;
}

bool Overlap(const TileBuf& a, const TileBuf& b) {
  return a.offset < b.offset + b.bytes() && b.offset < a.offset + a.bytes();
}

}  // namespace

// x and y are dead once added: t1 and t2 take their bytes.
TEST(AllocateBuffersPass, AChainReusesTheBytesOfDeadTiles) {
  BlockGraph g = Allocate(Chain());
  EXPECT_EQ(PrintKernel(g.fn, g.kernels[0]),
            "kernel k0_add_exp_mul_scalar_assemble [AIV] grid=(2, 1) ub=6144B {\n"
            "  # new kernel at add#0: first op of the region\n"
            "  param0 r %x: fp32(16, 64)\n"
            "  param1 r %y: fp32(16, 64)\n"
            "  param2 w %out_win3: fp32(16, 64) = %out(0, 0)\n"
            "  tile %x#0: Vec fp32[8, 64] valid=(8, 64) @ub+0\n"
            "  tile %y#1: Vec fp32[8, 64] valid=(8, 64) @ub+2048\n"
            "  tile %t0#2: Vec fp32[8, 64] valid=(8, 64) @ub+4096\n"
            "  tile %t1#3: Vec fp32[8, 64] valid=(8, 64) @ub+0\n"
            "  tile %t2#4: Vec fp32[8, 64] valid=(8, 64) @ub+2048\n"
            "  %x#0 = TLOAD(param0((8*$c0), (64*$c1)))\n"
            "  %y#1 = TLOAD(param1((8*$c0), (64*$c1)))\n"
            "  %t0#2 = TADD(%x#0, %y#1)\n"
            "  %t1#3 = TEXP(%t0#2)\n"
            "  %t2#4 = TMULS(%t1#3, 2)\n"
            "  TSTORE(%t2#4, param2((8*$c0), (64*$c1)))\n"
            "}\n");
}

// The 2 KiB tiles go first; the 32-byte row values fill in after them (64-byte aligned on the
// host). t1 was fused away: no reader, no bytes.
TEST(AllocateBuffersPass, LargestFirstAndUnusedTilesGetNoBytes) {
  BlockGraph g = Allocate(Softmax());
  const Kernel& k = g.kernels[0];
  EXPECT_EQ(Offsets(k), (std::vector<std::string>{"x@0", "t0@4096", "t1@-", "t2@2048", "t3@4160", "t4@0"}));
  EXPECT_EQ(k.ub_bytes, 4224);
}

// On the NPU models the alignment is 32 bytes: the row values pack tighter.
TEST(AllocateBuffersPass, TheMachinesAlignment) {
  const Kernel k = Allocate(Softmax(), "a2a3").kernels[0];
  EXPECT_EQ(Offsets(k), (std::vector<std::string>{"x@0", "t0@4096", "t1@-", "t2@2048", "t3@4128", "t4@0"}));
  EXPECT_EQ(k.ub_bytes, 4160);  // 4160 = 4128 + 32 rounded up to a cache line
}

// A cube kernel: Mat, Left, Right and Acc follow one another in the worker's scratch.
TEST(AllocateBuffersPass, CubeSpacesFollowOneAnother) {
  BlockGraph g = Allocate(MatmulRelu(false));
  const Kernel& k = g.kernels[0];
  EXPECT_EQ(Offsets(k), (std::vector<std::string>{"t0_acc@15360", "a_l1@6144", "b_l1@0", "a_l0@10240", "b_l0@12288"}));
  EXPECT_EQ(k.ub_bytes, 21504);
  for (const TileBuf& a : k.bufs)
    for (const TileBuf& b : k.bufs)
      if (a.id != b.id) EXPECT_FALSE(Overlap(a, b)) << a.name << " " << b.name;
}

// The tiles used in a reduction's loop are live for the whole loop, with the accumulator; the
// loop's load takes the bytes of the first tile's, dead before the loop.
TEST(AllocateBuffersPass, TilesOfALoopAreLiveThroughout) {
  BlockGraph g = Allocate(Softmax(64, 16));
  const Kernel& k = g.kernels[0];
  ASSERT_EQ(Opcodes(k.body), "TLOAD TROWMAX LOOP{TLOAD TROWMAX TMAX} TSTORE");
  EXPECT_EQ(Offsets(k), (std::vector<std::string>{"x@0", "t0@512", "x@0", "t0@576"}));
  std::vector<int> in_loop = {k.body[1].dst, k.body[2].body[0].dst, k.body[2].body[1].dst};
  EXPECT_EQ(in_loop, (std::vector<int>{1, 2, 3}));
  for (int a : in_loop)
    for (int b : in_loop)
      if (a != b) EXPECT_FALSE(Overlap(k.bufs[a], k.bufs[b])) << a << " " << b;
}

// A kernel over UB is the user's: a tile too large for the machine.
TEST(AllocateBuffersPass, AKernelOverUbIsAUserError) {
  BlockGraph g = Through(Chain(), "fuse_instructions").block_graph;
  g.kernels[0].bufs[2].shape = {512, 512};  // t0: 1 MiB, alive with x and y
  PassContext ctx(CompileOptions{});
  try {
    AllocateBuffers(g, ctx);
    FAIL() << "expected a UserError";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("kernel k0_add_exp_mul_scalar_assemble needs 1028 KiB of UB, more than the "
                                         "512 KiB of cpu"),
              std::string::npos)
        << e.what();
  }
}

TEST(AllocateBuffersPass, EveryKernelOfTheProgramIsAllocated) {
  BlockGraph g = Allocate(Branch());
  ASSERT_EQ(g.kernels.size(), 2u);
  for (const Kernel& k : g.kernels) {
    EXPECT_EQ(k.ub_bytes, 128) << k.name;  // two 64-byte rows
    EXPECT_EQ(Offsets(k)[0], k.bufs[0].name + "@0");
    EXPECT_EQ(Offsets(k)[1], k.bufs[1].name + "@64");
  }
}

TEST(AllocateBuffersPass, ProducesBuffersAllocated) {
  CompiledProgram p = Through(Chain(), "fuse_instructions");
  PassContext ctx(CompileOptions{});
  EXPECT_THROW(CheckProperty(IRProperty::BuffersAllocated, p, ctx.machine(), "fuse_instructions"), InternalError);
  AllocateBuffers(p.block_graph, ctx);
  EXPECT_NO_THROW(CheckProperty(IRProperty::BuffersAllocated, p, ctx.machine(), "allocate_buffers"));
  CompiledProgram past = p;
  past.block_graph.kernels[0].bufs[1].offset = 6144;  // y past the end of the scratch
  CompiledProgram shared = p;
  shared.block_graph.kernels[0].bufs[1].offset = 0;  // y on top of x, which TADD reads with it
  auto error = [&](const CompiledProgram& q) {
    try {
      CheckProperty(IRProperty::BuffersAllocated, q, ctx.machine(), "allocate_buffers");
    } catch (const InternalError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error(past).find("after pass allocate_buffers: property buffers_allocated does not hold: buffer %y#1 of "
                             "kernel k0_add_exp_mul_scalar_assemble is at offset 6144 (2048 bytes, scratch 6144 bytes"),
            std::string::npos)
      << error(past);
  EXPECT_NE(error(shared).find("buffers %x and %y of one instruction of kernel k0_add_exp_mul_scalar_assemble overlap"),
            std::string::npos)
      << error(shared);
}
