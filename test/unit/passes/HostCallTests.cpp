//===- HostCallTests.cpp - typed parameters of pccx.host.kernel -----------===//
//
// dialects/Pccx/HostCall.h: a call's struct becomes the params dictionary
// the table describes (keys, attribute kinds, optional parameters left
// out), and a required parameter left unset is an error naming the kernel
// and the parameter.
//
//===----------------------------------------------------------------------===//

#include "compiler/Registration.h"
#include "dialects/Pccx/HostCall.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

#include <type_traits>

using namespace mlir;
namespace pd = pccx::dialect;
namespace hc = pccx::dialect::hostcall;

namespace {

class HostCallTest : public ::testing::Test {
protected:
  void SetUp() override {
    DialectRegistry registry;
    pccx::registerAllDialects(registry);
    context_.appendDialectRegistry(registry);
    context_.loadAllAvailableDialects();
  }
  pd::HostRegionAttr region(int64_t offset) {
    return pd::HostRegionAttr::get(&context_, FlatSymbolRefAttr(), offset, 8, 1,
                                   1);
  }
  MLIRContext context_;
};

TEST_F(HostCallTest, BuildsTheDictionaryTheTableDescribes) {
  hc::RmsNorm call;
  call.In = region(0);
  call.Out = region(1);
  call.Eps = 1e-6f;
  FailureOr<DictionaryAttr> params =
      hc::buildParams(UnknownLoc::get(&context_), call);
  ASSERT_TRUE(succeeded(params));
  EXPECT_EQ(params->size(), 3u); // the optional gain is left out
  EXPECT_EQ(params->get("in"), region(0));
  EXPECT_EQ(params->get("out"), region(1));
  auto eps = dyn_cast_or_null<FloatAttr>(params->get("eps"));
  ASSERT_TRUE(eps);
  EXPECT_TRUE(eps.getType().isF64());
  EXPECT_EQ(eps.getValueAsDouble(), double(1e-6f));

  call.Gain = std::string("norm.weight");
  params = hc::buildParams(UnknownLoc::get(&context_), call);
  ASSERT_TRUE(succeeded(params));
  EXPECT_EQ(params->get("gain"), StringAttr::get(&context_, "norm.weight"));

  hc::AltUpInit init;
  init.X0 = region(0);
  init.Out = region(1);
  init.Projected = llvm::SmallVector<pd::HostRegionAttr>{region(2), region(3)};
  params = hc::buildParams(UnknownLoc::get(&context_), init);
  ASSERT_TRUE(succeeded(params));
  auto list = dyn_cast_or_null<ArrayAttr>(params->get("projected"));
  ASSERT_TRUE(list);
  EXPECT_EQ(list.size(), 2u);
  EXPECT_EQ(list[1], region(3));

  hc::EmitLogits emit;
  emit.In = region(0);
  emit.FirstRow = 3;
  params = hc::buildParams(UnknownLoc::get(&context_), emit);
  ASSERT_TRUE(succeeded(params));
  auto row = dyn_cast_or_null<IntegerAttr>(params->get("first_row"));
  ASSERT_TRUE(row);
  EXPECT_TRUE(row.getType().isInteger(64));
  EXPECT_EQ(row.getInt(), 3);
}

TEST_F(HostCallTest, UnsetRequiredParameterIsAnError) {
  std::string message;
  ScopedDiagnosticHandler handler(&context_, [&](Diagnostic &d) {
    message = d.str();
    return success();
  });
  hc::Fill call;
  call.Out = region(0);
  EXPECT_TRUE(failed(hc::buildParams(UnknownLoc::get(&context_), call)));
  EXPECT_EQ(message, "internal: host kernel 'fill' called without its "
                     "required parameter 'value'");
}

// A field takes only its kind's values: no integer for a Float, no float or
// bool for an Int, no plain string for a Region.
template <typename Field, typename Value, typename = void>
struct Assignable : std::false_type {};
template <typename Field, typename Value>
struct Assignable<
    Field, Value,
    std::void_t<decltype(std::declval<Field &>() = std::declval<Value>())>>
    : std::true_type {};
static_assert(Assignable<decltype(hc::Fill::Value), double>::value);
static_assert(!Assignable<decltype(hc::Fill::Value), int>::value);
static_assert(Assignable<decltype(hc::EmitLogits::FirstRow), int64_t>::value);
static_assert(!Assignable<decltype(hc::EmitLogits::FirstRow), double>::value);
static_assert(!Assignable<decltype(hc::EmitLogits::FirstRow), bool>::value);
static_assert(!Assignable<decltype(hc::Fill::Out), std::string>::value);
static_assert(Assignable<decltype(hc::MulTensor::Tensor), std::string>::value);
static_assert(
    !Assignable<decltype(hc::MulTensor::Tensor), pd::HostRegionAttr>::value);

} // namespace
