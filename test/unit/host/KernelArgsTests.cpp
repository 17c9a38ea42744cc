//===- KernelArgsTests.cpp - typed access to a bound call's arguments -----===//
//
// A kernel body reads its parameters by id (abi::param::Kernel::Param): the
// wrong kind does not compile; another kernel's parameter, or one the call
// lacks, is an error naming the kernel and the parameter, in every build
// type.
//
//===----------------------------------------------------------------------===//

#include "runtime/host/KernelArgs.h"

#include <gtest/gtest.h>

using namespace pccx::host;

namespace {

namespace abi = pccx::abi;
namespace param = pccx::abi::param;

/// A fill call bound from JSON over a 4-word window.
struct FillCall {
  std::vector<float> window = std::vector<float>(4 * 8, 0.0f);
  HostContext ctx;
  BoundCall call;
  std::string error;
  FillCall() {
    ctx.window = window.data();
    ctx.windowWords = 4;
    ctx.tokens = {0};
    EXPECT_TRUE(bindCall("fill", {{"out", {1, 8, 2, 1}}, {"value", 2.5}}, {},
                         &call, &error))
        << error;
  }
};

TEST(KernelArgs, ReadsTheParametersOfItsKernel) {
  FillCall f;
  KernelArgs args(f.call, f.ctx, &f.error);
  KernelArgs::Region out;
  double value = 0;
  ASSERT_TRUE(args.region(param::Fill::Out, &out, 8, 2)) << f.error;
  EXPECT_EQ(out.base, f.window.data() + 8);
  EXPECT_EQ(out.rows, 2);
  ASSERT_TRUE(args.number(param::Fill::Value, &value)) << f.error;
  EXPECT_EQ(value, 2.5);
}

TEST(KernelArgs, ParameterOfAnotherKernelIsAnError) {
  FillCall f;
  KernelArgs args(f.call, f.ctx, &f.error);
  KernelArgs::Region out;
  EXPECT_FALSE(args.region(param::Embed::Out, &out));
  EXPECT_EQ(f.error, "host kernel 'fill': parameter 'out' is read, but it is "
                     "a parameter of 'embed'");
  double eps;
  EXPECT_FALSE(args.number(param::RmsNorm::Eps, &eps));
  EXPECT_EQ(f.error, "host kernel 'fill': parameter 'eps' is read, but it is "
                     "a parameter of 'rms_norm'");
  bool present;
  EXPECT_FALSE(args.given(param::RmsNorm::Gain, &present));
  EXPECT_EQ(f.error, "host kernel 'fill': parameter 'gain' is read, but it "
                     "is a parameter of 'rms_norm'");
}

TEST(KernelArgs, MissingParameterIsAnError) {
  // A call assembled by hand (as a tool might) rather than by bindCall:
  // nothing guarantees its required arguments.
  HostContext ctx;
  std::string error;
  BoundCall call;
  call.kernel = abi::HostKernel::SoftCap;
  KernelArgs args(call, ctx, &error);
  double cap;
  EXPECT_FALSE(args.number(param::SoftCap::Cap, &cap));
  EXPECT_EQ(error, "host kernel 'softcap': parameter 'cap' is missing");

  call.args.resize(abi::kernelInfo(call.kernel).params.size());
  EXPECT_FALSE(args.number(param::SoftCap::Cap, &cap));
  EXPECT_EQ(error, "host kernel 'softcap': parameter 'cap' is missing");
  EXPECT_EQ(call.find(param::SoftCap::Cap), nullptr);

  call.args[abi::paramInfo(param::SoftCap::Cap).slot].present = true;
  call.args[abi::paramInfo(param::SoftCap::Cap).slot].number = 30;
  ASSERT_TRUE(args.number(param::SoftCap::Cap, &cap)) << error;
  EXPECT_EQ(cap, 30);
  EXPECT_NE(call.find(param::SoftCap::Cap), nullptr);
  EXPECT_EQ(call.find(param::Fill::Value), nullptr);
}

TEST(KernelArgs, OptionalParameterIsGivenOrNot) {
  HostContext ctx;
  std::string error;
  BoundCall call;
  call.kernel = abi::HostKernel::AttentionValues;
  call.args.resize(abi::kernelInfo(call.kernel).params.size());
  KernelArgs args(call, ctx, &error);
  bool present = true;
  ASSERT_TRUE(args.given(param::AttentionValues::Row, &present)) << error;
  EXPECT_FALSE(present);
  call.args[abi::paramInfo(param::AttentionValues::Row).slot].present = true;
  ASSERT_TRUE(args.given(param::AttentionValues::Row, &present)) << error;
  EXPECT_TRUE(present);
}

// The ids carry their kernel and kind for the accessors' compile-time
// checks.
static_assert(param::Fill::Value.kind == abi::ParamKind::Float);
static_assert(param::Fill::Value.kernel == abi::HostKernel::Fill);
static_assert(param::AltUpInit::Projected.kind == abi::ParamKind::RegionList);

} // namespace
