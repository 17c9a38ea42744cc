//===- Kv260Device.cpp - the KV260 overlay as a Device --------------------===//

#include "runtime/devices/Kv260Device.h"

#include "hw/isa/Isa.h"
#include "hw/machine/Target.h"
#include "hw/numerics/HalfFloat.h"
#include "hw/support/Format.h"
#include "runtime/devices/Devices.h"
#include "runtime/devices/DmaHeap.h"
#include "runtime/devices/Kv260TransferPlan.h"
#include "runtime/devices/Sysfs.h"
#include "runtime/devices/UDmaBuf.h"

#include <cerrno>
#include <cmath>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <dirent.h>

namespace pccx::device {

namespace {

class MappedRegisters : public RegisterWindow {
public:
  MappedRegisters(int fd, volatile uint32_t *base, size_t size)
      : fd_(fd), base_(base), size_(size) {}
  ~MappedRegisters() override {
    munmap(const_cast<uint32_t *>(base_), size_);
    close(fd_);
  }
  uint32_t read32(uint32_t offset) override { return base_[offset / 4]; }
  void write32(uint32_t offset, uint32_t value) override {
    base_[offset / 4] = value;
  }
  void write64(uint32_t offset, uint64_t value) override {
    // One 64-bit store: one AXI write beat carrying the whole word.
    *reinterpret_cast<volatile uint64_t *>(
        reinterpret_cast<volatile uint8_t *>(base_) + offset) = value;
  }
  size_t size() const override { return size_; }

private:
  int fd_;
  volatile uint32_t *base_;
  size_t size_;
};

} // namespace

bool findUio(const std::string &sysfsRoot, const std::string &name,
             UioInfo *info, std::string *error) {
  DIR *dir = opendir(sysfsRoot.c_str());
  if (!dir) {
    *error = sysfsRoot + ": " + std::strerror(errno) +
             " (is the UIO driver loaded? see docs/kv260.md)";
    return false;
  }
  std::vector<std::string> entries;
  while (dirent *e = readdir(dir))
    if (std::strncmp(e->d_name, "uio", 3) == 0)
      entries.push_back(e->d_name);
  closedir(dir);
  std::sort(entries.begin(), entries.end());
  std::string seen;
  for (const std::string &e : entries) {
    std::string devName;
    if (!readSysfsText(sysfsRoot + "/" + e + "/name", &devName))
      continue;
    seen += (seen.empty() ? "" : ", ") + e + " (" + devName + ")";
    if (devName != name)
      continue;
    std::string maps = sysfsRoot + "/" + e + "/maps/map0/";
    if (!readSysfsNumber(maps + "addr", &info->address) ||
        !readSysfsNumber(maps + "size", &info->size) || info->size == 0) {
      *error = sysfsRoot + "/" + e + ": map0 has no readable addr/size";
      return false;
    }
    info->device = "/dev/" + e;
    return true;
  }
  *error = "no UIO device named '" + name + "' under " + sysfsRoot +
           (seen.empty() ? " (none present)" : " (found: " + seen + ")");
  return false;
}

std::unique_ptr<RegisterWindow> openUio(const UioInfo &info,
                                        std::string *error) {
  int fd = open(info.device.c_str(), O_RDWR | O_SYNC);
  if (fd < 0) {
    *error = info.device + ": " + std::strerror(errno) +
             " (permissions: see docs/kv260.md)";
    return nullptr;
  }
  void *p = mmap(nullptr, info.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    *error = info.device + ": mmap: " + std::strerror(errno);
    close(fd);
    return nullptr;
  }
  return std::make_unique<MappedRegisters>(
      fd, static_cast<volatile uint32_t *>(p), size_t(info.size));
}

namespace {

using kv260::Channel;

/// The NPU status word with its bits named, for messages.
std::string describeNpuStatus(uint32_t s) {
  std::string names;
  if (s & kv260::kStatusBusy)
    names += ", busy";
  if (s & kv260::kStatusDone)
    names += ", done";
  if (s & ~kv260::kStatusStableBits)
    names += formatString(", debug bits 0x%x", s & ~kv260::kStatusStableBits);
  return formatString("0x%08x", s) +
         (names.empty() ? "" : " (" + names.substr(2) + ")");
}

std::string describeChannel(Channel c) {
  return std::string("DataMover ") + kv260::info(c).name + " (" +
         kv260::info(c).feeds + ")";
}

} // namespace

std::unique_ptr<Kv260Device>
Kv260Device::create(std::unique_ptr<RegisterWindow> regs,
                    std::unique_ptr<DmaBuffer> dma, const Kv260Options &options,
                    std::string *error) {
  if (!regs || regs->size() < kv260::kMapBytes) {
    *error = formatString("the register map is smaller than the 0x%x bytes of "
                          "the NPU page and its six DataMover pages",
                          kv260::kMapBytes);
    return nullptr;
  }
  size_t windowBytes = options.windowWords * 16;
  if (options.zeroBytes == 0 || options.zeroBytes % 16) {
    *error = "the zero region must be a multiple of 16 bytes";
    return nullptr;
  }
  const size_t stagingOffset =
      (windowBytes + size_t(options.zeroBytes) + 4095) / 4096 * 4096;
  if (!dma || dma->size() < stagingOffset + 4096) {
    *error = "the DMA buffer must hold the " + std::to_string(windowBytes) +
             "-byte host window, " + std::to_string(options.zeroBytes) +
             " bytes of zeros and a weight staging area";
    return nullptr;
  }
  if (dma->physical() + dma->size() > (uint64_t(1) << 32)) {
    *error = formatString(
        "the DMA buffer at physical 0x%llx..0x%llx lies beyond the "
        "DataMovers' 32-bit addresses; reserve it below 4 GiB (docs/kv260.md)",
        (unsigned long long)dma->physical(),
        (unsigned long long)(dma->physical() + dma->size() - 1));
    return nullptr;
  }
  if (options.maxCommandBytes == 0 || options.maxCommandBytes % 16 ||
      options.maxCommandBytes > kv260::kMaxCommandBytes) {
    *error = "the longest DataMover command must be a multiple of 16 bytes "
             "within the 23-bit byte count";
    return nullptr;
  }
  std::unique_ptr<Kv260Device> d(new Kv260Device());
  d->regs_ = std::move(regs);
  d->dma_ = std::move(dma);
  d->options_ = options;
  d->shadow_.assign(options.windowWords * 8, 0.0f);
  d->zeroOffset_ = windowBytes;
  d->stagingOffset_ = stagingOffset;
  d->stagingEnd_ = d->dma_->size();
  // The zeros every GEMM's second lane streams (GemmLanes::Summed).
  d->dma_->fill(d->zeroOffset_, 0, size_t(options.zeroBytes));
  if (!d->dma_->flush(d->zeroOffset_, size_t(options.zeroBytes), error))
    return nullptr;
  if (!d->resetChannels(error))
    return nullptr;
  return d;
}

bool Kv260Device::resetChannels(std::string *error) {
  if (regs_->read32(kv260::kRegStatus) == kv260::kStatusNoResponse) {
    *error = "the NPU status reads 0xffffffff: nothing answers at the "
             "overlay's control page (is the v002 overlay loaded? see "
             "docs/kv260.md)";
    return false;
  }
  for (unsigned i = 0; i < kv260::kChannelCount; ++i) {
    const Channel c = Channel(i);
    const uint32_t page = kv260::info(c).page;
    uint32_t flags = regs_->read32(page + kv260::kPageFlags);
    if (flags == kv260::kStatusNoResponse) {
      *error = formatString("%s: its page at offset 0x%x reads 0xffffffff "
                            "(is the v002 overlay loaded?)",
                            describeChannel(c).c_str(), page);
      return false;
    }
    if (!(flags & kv260::kFlagCmdEmpty)) {
      *error = describeChannel(c) +
               ": still holds commands of an earlier run; reload the overlay";
      return false;
    }
    // Statuses an earlier run left unread would be taken for ours.
    for (unsigned n = 0;
         n < kv260::kPageFifoDepth && !(flags & kv260::kFlagStatusEmpty); ++n) {
      regs_->read32(page + kv260::kPageStatusPop);
      flags = regs_->read32(page + kv260::kPageFlags);
    }
    if (flags & kv260::kFlagStickyErrors)
      regs_->write32(page + kv260::kPageErrorClear,
                     flags & kv260::kFlagStickyErrors);
  }
  return true;
}

bool Kv260Device::pushCommand(Channel channel, uint64_t offset, uint64_t bytes,
                              bool eof, std::string *error) {
  auto &queue = outstanding_[unsigned(channel)];
  if (queue.size() >= kv260::queueDepth(channel) && !popStatus(channel, error))
    return false;
  const uint8_t tag = nextTag_[unsigned(channel)];
  const uint64_t address = dma_->physical() + offset;
  kv260::CommandWords words;
  std::string why;
  if (!kv260::pack(address, bytes, tag, eof, &words, &why)) {
    *error = describeChannel(channel) + ": " + why;
    return false;
  }
  const uint32_t page = kv260::info(channel).page;
  const uint32_t flags = regs_->read32(page + kv260::kPageFlags);
  if (flags & kv260::kFlagCmdFull) {
    // The driver never has more than the FIFO's depth outstanding.
    *error =
        formatString("%s: the command FIFO is full while this driver "
                     "has %zu commands outstanding (FLAGS 0x%08x)",
                     describeChannel(channel).c_str(), queue.size(), flags);
    return false;
  }
  regs_->write32(page + kv260::kPageCmdLow, words.low);
  regs_->write32(page + kv260::kPageCmdHigh, words.high);
  regs_->write32(page + kv260::kPageCmdExt, words.ext);
  regs_->write32(page + kv260::kPageCmdPush, 1);
  queue.push_back({tag, uint32_t(address), uint32_t(bytes)});
  nextTag_[unsigned(channel)] = uint8_t((tag + 1) & kv260::kStsTagMask);
  return true;
}

bool Kv260Device::popStatus(Channel channel, std::string *error) {
  auto &queue = outstanding_[unsigned(channel)];
  const Outstanding oldest = queue.front();
  const uint32_t page = kv260::info(channel).page;
  for (uint64_t reads = 0;; ++reads) {
    if (reads == options_.pollLimit) {
      *error = formatString(
          "timed out waiting for %s: no status for its %u-byte transfer at "
          "0x%08x after %llu reads",
          describeChannel(channel).c_str(), oldest.bytes, oldest.address,
          (unsigned long long)options_.pollLimit);
      return false;
    }
    const uint32_t flags = regs_->read32(page + kv260::kPageFlags);
    if (!(flags & kv260::kFlagStatusEmpty))
      break;
    if (flags & kv260::kFlagStickyErrors) {
      *error = formatString("%s: sticky error bits 0x%x and no status for "
                            "its %u-byte transfer at 0x%08x (FLAGS 0x%08x)",
                            describeChannel(channel).c_str(),
                            (flags & kv260::kFlagStickyErrors) >> 4,
                            oldest.bytes, oldest.address, flags);
      return false;
    }
  }
  const uint32_t status = regs_->read32(page + kv260::kPageStatusPop) & 0xff;
  queue.pop_front();
  // The other words of the command's status, which must be the same.
  for (unsigned n = 1; n < kv260::statusWordsPerCommand(channel); ++n) {
    for (uint64_t reads = 0;; ++reads) {
      if (reads == options_.pollLimit) {
        *error = formatString("timed out waiting for %s: status word %u of "
                              "%u of its %u-byte transfer at 0x%08x",
                              describeChannel(channel).c_str(), n + 1,
                              kv260::statusWordsPerCommand(channel),
                              oldest.bytes, oldest.address);
        return false;
      }
      if (!(regs_->read32(page + kv260::kPageFlags) & kv260::kFlagStatusEmpty))
        break;
    }
    const uint32_t again = regs_->read32(page + kv260::kPageStatusPop) & 0xff;
    if (again != status) {
      *error = formatString("%s: the status words of one command differ "
                            "(0x%02x, then 0x%02x)",
                            describeChannel(channel).c_str(), status, again);
      return false;
    }
  }
  if ((status & kv260::kStsTagMask) != oldest.tag) {
    *error = formatString("%s: status 0x%02x carries tag %u where the oldest "
                          "command has tag %u (commands and statuses out of "
                          "step)",
                          describeChannel(channel).c_str(), status,
                          status & kv260::kStsTagMask, oldest.tag);
    return false;
  }
  const std::string outcome = kv260::describeStatus(status);
  if (outcome != "OKAY") {
    *error = formatString("%s: the %u-byte transfer at 0x%08x failed: %s "
                          "(status 0x%02x)",
                          describeChannel(channel).c_str(), oldest.bytes,
                          oldest.address, outcome.c_str(), status);
    return false;
  }
  return true;
}

bool Kv260Device::drainChannel(Channel channel, std::string *error) {
  while (!outstanding_[unsigned(channel)].empty())
    if (!popStatus(channel, error))
      return false;
  return true;
}

bool Kv260Device::drainAll(std::string *error) {
  for (unsigned i = 0; i < kv260::kChannelCount; ++i)
    if (!drainChannel(Channel(i), error))
      return false;
  return true;
}

bool Kv260Device::waitNpu(std::string *error) {
  if (!npuActive_)
    return true;
  if (!lastSignalsDone_) {
    // A MEMCPY raises no done and leaves BUSY set. The NPU runs in order,
    // so the last MEMCPY's DataMover status, popped before this, says that
    // it and everything before it have finished.
    npuActive_ = false;
    return true;
  }
  // The status FIFO still holds words from before the last issue.
  for (unsigned i = 0; i < kv260::kStatusFifoDepth; ++i)
    regs_->read32(kv260::kRegStatus);
  uint32_t status = 0;
  for (uint64_t reads = 0; reads < options_.pollLimit; ++reads) {
    status = regs_->read32(kv260::kRegStatus);
    if (status == kv260::kStatusNoResponse) {
      *error = "the NPU stopped answering (its status reads 0xffffffff)";
      return false;
    }
    // DONE is cleared when an op starts and set by the done pulse of a
    // MEMSET, CVO or GEMM store.
    if ((status & kv260::kStatusDone) && !(status & kv260::kStatusBusy)) {
      npuActive_ = false;
      return true;
    }
  }
  *error = formatString("timed out waiting for the NPU: no done after %llu "
                        "status reads (last status %s)",
                        (unsigned long long)options_.pollLimit,
                        describeNpuStatus(status).c_str());
  return false;
}

bool Kv260Device::registerWeights(const uint8_t *section, size_t bytes,
                                  BufferId *id, std::string *error) {
  *id = BufferId(buffers_.size());
  if (!section || bytes == 0) {
    buffers_.push_back(Buffer());
    return true;
  }
  const size_t size = dma_->size();
  const size_t need = stagingOffset_ + options_.minStagingBytes + bytes;
  if (bytes > stagingEnd_ || need > stagingEnd_) {
    const double mib = 1.0 / (1 << 20);
    *error = formatString(
        "the weights section (%.1f MiB) does not fit the DMA buffer: the "
        "host window and staging take %.1f MiB of its %.1f MiB; configure "
        "u-dma-buf with at least %.0f MiB (docs/kv260.md, memory budget)",
        double(bytes) * mib,
        double(stagingOffset_ + options_.minStagingBytes) * mib,
        double(size) * mib, std::ceil(double(need + size - stagingEnd_) * mib));
    return false;
  }
  // Below the buffers registered before, page aligned; staging keeps what
  // is before.
  const size_t offset = (stagingEnd_ - bytes) / 4096 * 4096;
  if (offset < stagingOffset_ + options_.minStagingBytes) {
    *error = "the weights section does not fit the DMA buffer at a page "
             "boundary";
    return false;
  }
  dma_->write(offset, section, bytes);
  if (!dma_->flush(offset, bytes, error))
    return false;
  buffers_.push_back({offset, bytes, false});
  stagingEnd_ = offset;
  return true;
}

StreamableBuffer Kv260Device::allocateStreamable(size_t bytes,
                                                 std::string *error) {
  const size_t aligned = (bytes + 4095) / 4096 * 4096;
  if (aligned > stagingEnd_ ||
      stagingEnd_ - aligned < stagingOffset_ + options_.minStagingBytes) {
    const double mib = 1.0 / (1 << 20);
    *error = formatString(
        "%.1f MiB of KV records do not fit the DMA buffer next to the host "
        "window, the staging area and the resident weights (%.1f MiB "
        "free); configure a larger u-dma-buf (docs/kv260.md, memory budget)",
        double(bytes) * mib,
        double(stagingEnd_ - stagingOffset_ - options_.minStagingBytes) * mib);
    return StreamableBuffer();
  }
  stagingEnd_ -= aligned;
  dma_->fill(stagingEnd_, 0, bytes);
  StreamableBuffer buffer;
  buffer.id = BufferId(buffers_.size());
  buffer.data = dma_->data() + stagingEnd_;
  buffers_.push_back({stagingEnd_, bytes, true});
  return buffer;
}

bool Kv260Device::pushWeights(const WeightHandle &record, const float *,
                              std::string *error) {
  if (record.buffer >= buffers_.size() ||
      !fitsBuffer(record, buffers_[record.buffer].bytes)) {
    *error = describeBadHandle(record, buffers_.size(),
                               record.buffer < buffers_.size()
                                   ? buffers_[record.buffer].bytes
                                   : 0);
    return false;
  }
  const Buffer &buffer = buffers_[record.buffer];
  PendingRecord pending;
  pending.offset = buffer.offset + size_t(record.offset);
  pending.bytes = size_t(record.bytes);
  pending.flush = buffer.hostWritten;
  pendingWeights_.push_back(pending);
  return true;
}

void Kv260Device::pushHostWeights(const uint8_t *data, size_t bytes) {
  PendingRecord pending;
  pending.host = data;
  pending.bytes = bytes;
  pendingWeights_.push_back(pending);
}

bool Kv260Device::flushPendingWeights(uint64_t index, std::string *error) {
  const std::string where = "instruction " + std::to_string(index) + ": ";
  if (pendingWeights_.empty()) {
    *error = where + "a GEMM with no weight record queued";
    return false;
  }
  afterWord_.clear();
  for (const PendingRecord &record : pendingWeights_) {
    const size_t bytes = record.bytes;
    // Records of registered buffers stream from where they lie (once the
    // host's stores to them are visible); host records are staged.
    uint64_t offset = record.offset;
    kv260::PlanOptions planOptions;
    planOptions.maxCommandBytes = options_.maxCommandBytes;
    planOptions.zeroBytes = options_.zeroBytes;
    if (record.host) {
      const size_t capacity = stagingEnd_ - stagingOffset_;
      if (bytes > capacity) {
        *error = where + "a weight record of " + std::to_string(bytes) +
                 " bytes exceeds the DMA staging area of " +
                 std::to_string(capacity) + " bytes";
        return false;
      }
      planOptions.staged = true;
      offset = stagingOffset_;
    }
    const kv260::TransferPlan plan =
        kv260::planTransfer(kv260::Stream::GemmWeights, bytes, planOptions);
    if (!plan.drainFirst.empty() && !afterWord_.empty()) {
      // Draining would wait for commands the NPU reads only after the word.
      *error = where + "a run-time record follows one longer than the "
                       "DataMover queues in the same GEMM";
      return false;
    }
    for (Channel c : plan.drainFirst)
      if (!drainChannel(c, error))
        return false;
    if (planOptions.staged) {
      dma_->write(stagingOffset_, record.host, bytes);
      if (!dma_->flush(stagingOffset_, bytes, error))
        return false;
    } else if (record.flush && !dma_->flush(size_t(offset), bytes, error)) {
      return false;
    }
    for (size_t i = 0; i < plan.commands.size(); ++i) {
      kv260::PlannedCommand c = plan.commands[i];
      c.offset += c.zeros ? zeroOffset_ : offset;
      // Once one command waits for the word, every later one does: a
      // lane's commands stay in order.
      if (i >= plan.beforeWord || !afterWord_.empty()) {
        afterWord_.push_back(c);
      } else if (!pushCommand(c.channel, c.offset, c.bytes, c.eof, error)) {
        *error = where + *error;
        return false;
      }
    }
  }
  pendingWeights_.clear();
  return true;
}

bool Kv260Device::issue(uint64_t word, uint64_t index, std::string *error) {
  isa::Instruction inst;
  std::string why;
  const std::string where = "instruction " + std::to_string(index) + ": ";
  if (!isa::decode(word, inst, &why)) {
    *error = where + why;
    return false;
  }
  const std::string missing =
      machine::missingCapability(inst, machine::Target::V002Rtl);
  if (!missing.empty()) {
    *error = where + "the overlay cannot run it: " + missing +
             " (docs/kv260.md, hardware requests)";
    return false;
  }
  // MEMSET, CVO and GEMM (its result store) end with a done pulse; a
  // MEMCPY in either direction does not (Kv260Protocol.h).
  const bool signalsDone = inst.opcode != isa::Opcode::Memcpy;
  if (inst.opcode == isa::Opcode::Memset &&
      inst.get(isa::Field::Memset_dest_cache) == 0) {
    // Mirror the fmap_shape bank: MEMCPY lengths come from it.
    auto &e = fmap_[inst.get(isa::Field::Memset_dest_addr) % fmap_.size()];
    e = {true,
         {uint16_t(inst.get(isa::Field::Memset_a_value)),
          uint16_t(inst.get(isa::Field::Memset_b_value)),
          uint16_t(inst.get(isa::Field::Memset_c_value))}};
  }
  if (inst.opcode == isa::Opcode::Memcpy) {
    // v002-rtl: (1, 0) loads from the host, every other pair stores to it;
    // ceil(a*b*c / 8) words at the window base, where the DataMover command
    // points (aux_addr never reaches the hardware).
    const bool fromHost = inst.get(isa::Field::Memcpy_from_device) &&
                          !inst.get(isa::Field::Memcpy_to_device);
    const unsigned entry = inst.get(isa::Field::Memcpy_shape_ptr_addr);
    const auto &e = fmap_[entry % fmap_.size()];
    if (!e.first) {
      *error = where + "MEMCPY uses an fmap_shape entry no MEMSET has set";
      return false;
    }
    const uint64_t elements = uint64_t(e.second[0]) * e.second[1] * e.second[2];
    if (elements == 0 ||
        elements + 7 >= (uint64_t(1) << machine::l2_address_bits)) {
      *error = where + formatString("MEMCPY of a*b*c = %llu elements (fmap_"
                                    "shape entry %u); the overlay moves 1 to "
                                    "131064",
                                    (unsigned long long)elements, entry);
      return false;
    }
    const uint64_t words = (elements + 7) / 8;
    if (words > options_.windowWords) {
      *error =
          where + formatString("MEMCPY moves %llu words, more than the "
                               "%zu-word host window",
                               (unsigned long long)words, options_.windowWords);
      return false;
    }
    const kv260::TransferPlan plan = kv260::planTransfer(
        fromHost ? kv260::Stream::HostToL2 : kv260::Stream::L2ToHost,
        words * 16, kv260::PlanOptions());
    for (Channel c : plan.drainFirst)
      if (!drainChannel(c, error))
        return false;
    if (fromHost) {
      // The window starts the page-aligned buffer and moves whole 16-byte
      // words: the row functions' vector stores are aligned, as an
      // uncached window (Device memory on arm64) needs.
      uint16_t *lanes = reinterpret_cast<uint16_t *>(dma_->data());
      hw::floatToBf16Row(shadow_.data(), lanes, size_t(words * 8));
      if (!dma_->flush(0, size_t(words * 16), error))
        return false;
    } else {
      toShadow_ = std::max(toShadow_, words);
    }
    afterWord_.clear();
    for (size_t i = 0; i < plan.commands.size(); ++i)
      if (i >= plan.beforeWord)
        afterWord_.push_back(plan.commands[i]);
      else if (!pushCommand(plan.commands[i].channel, plan.commands[i].offset,
                            plan.commands[i].bytes, plan.commands[i].eof,
                            error))
        return false;
  }
  if (inst.opcode == isa::Opcode::Gemm && !flushPendingWeights(index, error))
    return false;
  regs_->write64(kv260::kRegInstruction, word);
  npuActive_ = true;
  lastSignalsDone_ = signalsDone;
  // The plan's commands after the word: a MEMCPY's, and a record's beyond
  // the queues' depth, which the NPU drains now (each waits for a slot:
  // pushCommand pops the oldest status first).
  for (const kv260::PlannedCommand &c : afterWord_)
    if (!pushCommand(c.channel, c.offset, c.bytes, c.eof, error)) {
      *error = where + *error;
      afterWord_.clear();
      return false;
    }
  afterWord_.clear();
  return true;
}

bool Kv260Device::sync(std::string *error) {
  if (!drainAll(error) || !waitNpu(error))
    return false;
  if (toShadow_) {
    if (!dma_->invalidate(0, size_t(toShadow_ * 16), error))
      return false;
    const uint16_t *lanes = reinterpret_cast<const uint16_t *>(dma_->data());
    hw::bf16ToFloatRow(lanes, shadow_.data(), size_t(toShadow_ * 8));
    toShadow_ = 0;
  }
  return true;
}

bool Kv260Device::finishSegment(std::string *error) {
  if (!pendingWeights_.empty()) {
    *error = std::to_string(pendingWeights_.size()) +
             " weight records were queued but no GEMM consumed them";
    return false;
  }
  return sync(error);
}

std::unique_ptr<Kv260Device> openKv260(const std::string &uioName,
                                       const Kv260DmaSource &source,
                                       std::string *error) {
  WindowCaching caching;
  if (!parseWindowCaching(source.windowCaching, &caching)) {
    *error = "unknown host-window caching '" + source.windowCaching +
             "' (auto, cached, uncached)";
    return nullptr;
  }
  UioInfo uio;
  if (!findUio("/sys/class/uio", uioName, &uio, error))
    return nullptr;
  auto regs = openUio(uio, error);
  if (!regs)
    return nullptr;
  const Kv260Options options;
  std::unique_ptr<DmaBuffer> dma;
  if (source.kind == "dma-heap")
    dma = openDmaHeap(source.heap, source.heapBytes, error);
  else
    dma = openUdmabuf(source.udmabuf, options.windowWords * 16, caching, error);
  if (!dma)
    return nullptr;
  return Kv260Device::create(std::move(regs), std::move(dma), options, error);
}

namespace {

/// What works without the overlay, in every refusal of the board.
constexpr const char *kCpuPathHint =
    "Gemma 3n runs on the board's CPU today (the overlay computes no Gemma "
    "bundle yet, docs/kv260.md §5): run the same command without --device "
    "kv260 (the simulator device, on this machine's cores); a bundle for "
    "the overlay is compiled with --target v002-rtl";

std::string onlyHardwareNumerics(const std::string &value) {
  if (value == "hardware")
    return "";
  return "the board computes in hardware numerics; '" + value +
         "' numerics are a simulator mode";
}

std::unique_ptr<Device> openBoard(const OptionValues &options,
                                  machine::Target target, std::string *error) {
  if (target != machine::Target::V002Rtl) {
    // The overlay is the v002 RTL: its MEMCPY has no host offset and row
    // stride, and its GEMV no result path (docs/isa-semantics.md §13).
    // No Gemma bundle compiles for the RTL yet (docs/kv260.md §5): the
    // working alternative is the CPU path, named first.
    *error = std::string("the overlay runs the v002 RTL's conventions; this "
                         "bundle is for target ") +
             machine::targetProfile(target).name + ". " + kCpuPathHint;
    return nullptr;
  }
  Kv260DmaSource dma;
  dma.kind = options.text("dma-buffer");
  dma.udmabuf = options.text("udmabuf");
  dma.windowCaching = options.text("dma-window");
  dma.heap = options.text("dma-heap");
  dma.heapBytes = size_t(options.count("dma-heap-mib")) << 20;
  auto board = openKv260(options.text("uio-name"), dma, error);
  if (!board)
    *error += ". " + std::string(kCpuPathHint);
  return board;
}

} // namespace

const DeviceSpec &kv260Device() {
  static const DeviceSpec spec = {
      "kv260",
      "the pccx v002 overlay on a Kria KV260; runs bundles for --target "
      "v002-rtl only (docs/kv260.md)",
      {OptionSpec::text("numerics", "hardware", "MODE",
                        "hardware only: the board computes in its own "
                        "numerics",
                        onlyHardwareNumerics),
       OptionSpec::text("uio-name", kv260::kUioName, "NAME",
                        "UIO device name of the overlay"),
       OptionSpec::text("udmabuf", "udmabuf0", "NAME", "u-dma-buf buffer"),
       OptionSpec::choice("dma-window", "auto", "MODE",
                          "map the buffer's host window cached (with "
                          "u-dma-buf's cache maintenance) or uncached "
                          "(docs/kv260.md); auto caches it when u-dma-buf "
                          "can keep it consistent",
                          {"auto", "cached", "uncached"}),
       OptionSpec::choice("dma-buffer", "udmabuf", "SOURCE",
                          "where the DMA buffer comes from: the u-dma-buf "
                          "buffer --udmabuf, or an allocation from the CMA "
                          "heap --dma-heap (docs/kv260.md §3)",
                          {"udmabuf", "dma-heap"}),
       OptionSpec::text("dma-heap", "reserved", "NAME",
                        "the CMA heap under /dev/dma_heap for --dma-buffer "
                        "dma-heap"),
       OptionSpec::count("dma-heap-mib", "1280", "N",
                         "MiB to allocate from --dma-heap (the memory "
                         "budget of docs/kv260.md §3)",
                         4095)},
      openBoard};
  return spec;
}

} // namespace pccx::device
