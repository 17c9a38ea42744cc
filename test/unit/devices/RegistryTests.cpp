//===- RegistryTests.cpp - the device registry ----------------------------===//

#include "runtime/devices/Devices.h"

#include <gtest/gtest.h>

using namespace pccx;
using namespace pccx::device;

namespace {

bool contains(const std::string &text, const std::string &part) {
  return text.find(part) != std::string::npos;
}

TEST(DeviceRegistry, ListsTheRegisteredDevicesInOrder) {
  // The simulator first (every front end's default); devices registered
  // after the board follow it.
  const std::vector<std::string> names = deviceNames();
  ASSERT_GE(names.size(), 2u);
  EXPECT_EQ(names[0], "sim");
  EXPECT_EQ(names[1], "kv260");
  ASSERT_NE(findDevice("kv260"), nullptr);
  EXPECT_EQ(findDevice("kv260")->name, "kv260");
  EXPECT_EQ(findDevice("gpu"), nullptr);
  for (const DeviceSpec *d : registeredDevices()) {
    EXPECT_FALSE(d->description.empty()) << d->name;
    EXPECT_NE(d->open, nullptr) << d->name;
    for (const OptionSpec &o : d->options) {
      // Every default passes the option's own checks.
      OptionValues values;
      std::string error;
      EXPECT_TRUE(
          resolveOptions(*d, {{o.name, o.defaultValue}}, &values, &error))
          << d->name << " " << o.name << ": " << error;
    }
  }
  EXPECT_EQ(listAlternatives({"a", "b", "c"}), "a, b or c");
  EXPECT_EQ(listAlternatives({"a"}), "a");
}

TEST(DeviceRegistry, UnknownDeviceIsNamedWithTheKnownOnes) {
  std::string error;
  EXPECT_EQ(openDevice("gpu", {}, machine::kDefaultTarget, &error), nullptr);
  const std::string known = listAlternatives(deviceNames());
  EXPECT_EQ(error, "unknown device 'gpu' (known: " + known + ")");
  EXPECT_TRUE(contains(known, "sim, kv260") || known == "sim or kv260")
      << known;
  EXPECT_FALSE(checkDeviceOptions("", {}, &error));
  EXPECT_EQ(error, "unknown device '' (known: " + known + ")");
}

TEST(DeviceRegistry, UnknownOptionIsNamedWithTheDevicesOptions) {
  std::string error;
  EXPECT_EQ(
      openDevice("sim", {{"uio-name", "x"}}, machine::kDefaultTarget, &error),
      nullptr);
  EXPECT_EQ(error, "sim: unknown option 'uio-name' (its options: numerics "
                   "or threads)");
  EXPECT_FALSE(checkDeviceOptions("kv260", {{"threads", "2"}}, &error));
  EXPECT_EQ(error, "kv260: unknown option 'threads' (its options: numerics, "
                   "uio-name, udmabuf, dma-window, dma-buffer, dma-heap or "
                   "dma-heap-mib)");
}

TEST(DeviceRegistry, BadValuesAreNamedWithWhatIsAccepted) {
  std::string error;
  EXPECT_FALSE(checkDeviceOptions("sim", {{"numerics", "fast"}}, &error));
  EXPECT_EQ(error, "sim: option 'numerics' must be integer, hardware or "
                   "reference, not 'fast'");
  for (const char *bad :
       {"lots", "-1", "1025", "", "2x", "99999999999999999999"}) {
    EXPECT_FALSE(checkDeviceOptions("sim", {{"threads", bad}}, &error)) << bad;
    EXPECT_EQ(error, std::string("sim: option 'threads' must be a count from "
                                 "0 to 1024, not '") +
                         bad + "'");
  }
  EXPECT_FALSE(checkDeviceOptions("kv260", {{"dma-window", "fast"}}, &error));
  EXPECT_EQ(error, "kv260: option 'dma-window' must be auto, cached or "
                   "uncached, not 'fast'");
  EXPECT_FALSE(checkDeviceOptions("kv260", {{"udmabuf", ""}}, &error));
  EXPECT_EQ(error, "kv260: option 'udmabuf' needs a value");
  // A device's own check words the refusal.
  EXPECT_FALSE(
      checkDeviceOptions("kv260", {{"numerics", "reference"}}, &error));
  EXPECT_EQ(error, "kv260: the board computes in hardware numerics; "
                   "'reference' numerics are a simulator mode");
  EXPECT_TRUE(checkDeviceOptions("kv260", {{"numerics", "hardware"}}, &error))
      << error;
}

TEST(DeviceRegistry, OptionsReachTheDeviceWithDefaultsFilledIn) {
  std::string error;
  auto sim = openDevice("sim", {}, machine::kDefaultTarget, &error);
  ASSERT_NE(sim, nullptr) << error;
  EXPECT_STREQ(sim->name(), "sim");
  // The simulator's default is its fast integer numerics.
  EXPECT_EQ(sim->numerics(), sim::Numerics::Integer);
  // A later assignment of an option wins.
  auto ref = openDevice(
      "sim",
      {{"numerics", "hardware"}, {"threads", "3"}, {"numerics", "reference"}},
      machine::kDefaultTarget, &error);
  ASSERT_NE(ref, nullptr) << error;
  EXPECT_EQ(ref->numerics(), sim::Numerics::Reference);

  OptionValues values;
  ASSERT_TRUE(resolveOptions(*findDevice("kv260"), {{"udmabuf", "udmabuf3"}},
                             &values, &error))
      << error;
  EXPECT_EQ(values.text("udmabuf"), "udmabuf3");
  EXPECT_EQ(values.text("uio-name"), "pccx-npu");
  EXPECT_EQ(values.text("dma-window"), "auto");
  ASSERT_TRUE(
      resolveOptions(*findDevice("sim"), {{"threads", "12"}}, &values, &error));
  EXPECT_EQ(values.count("threads"), 12u);
}

TEST(DeviceRegistry, OptionStrings) {
  OptionList options;
  std::string error;
  ASSERT_TRUE(parseOptionList("numerics=reference,threads=4,uio-name=a=b",
                              &options, &error))
      << error;
  EXPECT_EQ(options, (OptionList{{"numerics", "reference"},
                                 {"threads", "4"},
                                 {"uio-name", "a=b"}}));
  options.clear();
  EXPECT_TRUE(parseOptionList("", &options, &error));
  EXPECT_TRUE(options.empty());
  EXPECT_FALSE(parseOptionList("threads", &options, &error));
  EXPECT_EQ(error, "device option 'threads' is not KEY=VALUE");
  EXPECT_FALSE(parseOptionList("=4", &options, &error));
  EXPECT_EQ(error, "device option '=4' is not KEY=VALUE");
  EXPECT_FALSE(parseOptionList("threads=4,", &options, &error));
  EXPECT_EQ(error, "device option '' is not KEY=VALUE");
}

TEST(DeviceRegistry, HelpListsEveryDeviceAndOption) {
  const std::string help = deviceHelp();
  EXPECT_TRUE(contains(help, "  --device sim|kv260")) << help;
  EXPECT_TRUE(contains(help, "the device that runs the bundle (default sim):"))
      << help;
  for (const DeviceSpec *d : registeredDevices()) {
    EXPECT_TRUE(contains(help, d->name + ": ")) << d->name << "\n" << help;
    for (const OptionSpec &o : d->options) {
      EXPECT_TRUE(contains(help, "  --" + o.name + " " + o.valueName + " "))
          << o.name << "\n"
          << help;
      EXPECT_TRUE(isDeviceOption(o.name)) << o.name;
    }
  }
  EXPECT_TRUE(contains(help, "(default hardware)")) << help;
  EXPECT_TRUE(contains(help, "--device-option KEY=VALUE")) << help;
  EXPECT_FALSE(isDeviceOption("device"));
  EXPECT_FALSE(isDeviceOption("port"));
  // Lines fit the tools' help width.
  for (size_t start = 0, end; start < help.size(); start = end + 1) {
    end = help.find('\n', start);
    EXPECT_LE(end - start, 77u) << help.substr(start, end - start);
  }
}

} // namespace
