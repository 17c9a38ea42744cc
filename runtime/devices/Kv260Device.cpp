//===- Kv260Device.cpp - the KV260 overlay as a Device --------------------===//

#include "runtime/devices/Kv260Device.h"

#include "hw/isa/Isa.h"
#include "hw/numerics/HalfFloat.h"
#include "hw/support/Format.h"
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

std::unique_ptr<Kv260Device>
Kv260Device::create(std::unique_ptr<RegisterWindow> regs,
                    std::unique_ptr<DmaBuffer> dma,
                    const Kv260Options &options, std::string *error) {
  if (!regs || regs->size() < 0x30) {
    *error = "the register window is smaller than the 0x30 bytes the "
             "protocol uses";
    return nullptr;
  }
  size_t windowBytes = options.windowWords * 16;
  if (!dma || dma->size() < windowBytes + 4096) {
    *error = "the DMA buffer must hold the " + std::to_string(windowBytes) +
             "-byte host window and a weight staging area";
    return nullptr;
  }
  std::unique_ptr<Kv260Device> d(new Kv260Device());
  d->regs_ = std::move(regs);
  d->dma_ = std::move(dma);
  d->options_ = options;
  d->shadow_.assign(options.windowWords * 8, 0.0f);
  d->stagingOffset_ = (windowBytes + 4095) / 4096 * 4096;
  d->stagingEnd_ = d->dma_->size();
  if (!d->waitIdle(error))
    return nullptr;
  d->regs_->write64(kv260::kRegWindowBase, d->dma_->physical());
  return d;
}

bool Kv260Device::waitIdle(std::string *error) {
  for (uint64_t i = 0; i < options_.pollLimit; ++i) {
    uint64_t status = regs_->read64(kv260::kRegStatus);
    if (status & kv260::kStatusError) {
      *error = formatString("the NPU reports an error (status 0x%llx)",
                            (unsigned long long)status);
      return false;
    }
    if (!(status & kv260::kStatusBusy))
      return true;
  }
  *error = "timed out waiting for the NPU (still busy after " +
           std::to_string(options_.pollLimit) + " status reads)";
  return false;
}

bool Kv260Device::keepWeightsResident(const uint8_t *section, size_t bytes,
                                      std::string *error) {
  if (!section || bytes == 0)
    return true;
  const size_t size = dma_->size();
  const size_t need = stagingOffset_ + options_.minStagingBytes + bytes;
  if (bytes > size || need > size) {
    const double mib = 1.0 / (1 << 20);
    *error = formatString(
        "the weights section (%.1f MiB) does not fit the DMA buffer: the "
        "host window and staging take %.1f MiB of its %.1f MiB; configure "
        "u-dma-buf with at least %.0f MiB (docs/kv260.md, memory budget)",
        double(bytes) * mib,
        double(stagingOffset_ + options_.minStagingBytes) * mib,
        double(size) * mib, std::ceil(double(need) * mib));
    return false;
  }
  // At the end of the buffer, page aligned; staging keeps what is before.
  residentOffset_ = (size - bytes) / 4096 * 4096;
  if (residentOffset_ < stagingOffset_ + options_.minStagingBytes) {
    *error = "the weights section does not fit the DMA buffer at a page "
             "boundary";
    return false;
  }
  std::memcpy(dma_->data() + residentOffset_, section, bytes);
  if (!dma_->flush(residentOffset_, bytes, error))
    return false;
  residentSource_ = section;
  residentBytes_ = bytes;
  stagingEnd_ = residentOffset_;
  return true;
}

uint8_t *Kv260Device::allocateStreamable(size_t bytes, std::string *error) {
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
    return nullptr;
  }
  stagingEnd_ -= aligned;
  uint8_t *at = dma_->data() + stagingEnd_;
  std::memset(at, 0, bytes);
  return at;
}

void Kv260Device::pushWeights(const uint8_t *data, size_t bytes) {
  pendingWeights_.push_back({data, bytes});
}

bool Kv260Device::flushPendingWeights(std::string *error) {
  for (auto &[data, bytes] : pendingWeights_) {
    // A record of the resident section streams from where it lies.
    const uintptr_t at = reinterpret_cast<uintptr_t>(data),
                    base = reinterpret_cast<uintptr_t>(residentSource_);
    if (residentSource_ && at >= base && bytes <= residentBytes_ &&
        at - base <= residentBytes_ - bytes) {
      // One weight-stream command at a time (this register protocol has no
      // queue): the previous transfer must have been taken.
      if (!waitIdle(error))
        return false;
      regs_->write64(kv260::kRegWeightAddr,
                     dma_->physical() + residentOffset_ + (at - base));
      regs_->write64(kv260::kRegWeightBytes, bytes);
      continue;
    }
    // Records the host wrote into the DMA buffer (KV records, masks)
    // stream from where they lie, once the host's stores are visible.
    const uintptr_t dmaBase = reinterpret_cast<uintptr_t>(dma_->data());
    if (at >= dmaBase + stagingEnd_ && bytes <= dma_->size() &&
        at - dmaBase <= dma_->size() - bytes) {
      if (!waitIdle(error))
        return false;
      if (!dma_->flush(at - dmaBase, bytes, error))
        return false;
      regs_->write64(kv260::kRegWeightAddr, dma_->physical() + (at - dmaBase));
      regs_->write64(kv260::kRegWeightBytes, bytes);
      continue;
    }
    size_t capacity = stagingEnd_ - stagingOffset_;
    if (bytes > capacity) {
      *error = "a weight record of " + std::to_string(bytes) +
               " bytes exceeds the DMA staging area of " +
               std::to_string(capacity) + " bytes";
      return false;
    }
    // The previous transfer must be done before its staging bytes change.
    if (!waitIdle(error))
      return false;
    std::memcpy(dma_->data() + stagingOffset_, data, bytes);
    if (!dma_->flush(stagingOffset_, bytes, error))
      return false;
    regs_->write64(kv260::kRegWeightAddr, dma_->physical() + stagingOffset_);
    regs_->write64(kv260::kRegWeightBytes, bytes);
  }
  pendingWeights_.clear();
  return true;
}

bool Kv260Device::issue(uint64_t word, uint64_t index, std::string *error) {
  isa::Instruction inst;
  std::string why;
  if (!isa::decode(word, inst, &why)) {
    *error = "instruction " + std::to_string(index) + ": " + why;
    return false;
  }
  if (inst.opcode == isa::Opcode::Memset &&
      inst.get(isa::Field::Memset_dest_cache) == 0) {
    // Mirror the fmap_shape bank: MEMCPY extents are checked against it.
    auto &e = fmap_[inst.get(isa::Field::Memset_dest_addr) % fmap_.size()];
    e = {true,
         {uint16_t(inst.get(isa::Field::Memset_a_value)),
          uint16_t(inst.get(isa::Field::Memset_b_value)),
          uint16_t(inst.get(isa::Field::Memset_c_value))}};
  }
  if (inst.opcode == isa::Opcode::Memcpy) {
    bool fromHost = inst.get(isa::Field::Memcpy_from_device);
    bool toHost = inst.get(isa::Field::Memcpy_to_device);
    if (fromHost && toHost) {
      *error = "instruction " + std::to_string(index) +
               ": host-to-host MEMCPY is not supported";
      return false;
    }
    if (fromHost || toHost) {
      const auto &e =
          fmap_[inst.get(isa::Field::Memcpy_shape_ptr_addr) % fmap_.size()];
      if (!e.first) {
        *error = "instruction " + std::to_string(index) +
                 ": MEMCPY uses an fmap_shape entry no MEMSET has set";
        return false;
      }
      uint64_t a = e.second[0], rows = e.second[1] ? e.second[1] : 1,
               stride = e.second[2] ? e.second[2] : a;
      uint64_t aux = inst.get(isa::Field::Memcpy_aux_addr);
      uint64_t end = aux + (rows - 1) * stride + a;
      if (a == 0) {
        *error = "instruction " + std::to_string(index) +
                 ": MEMCPY shape has 0 words per row";
        return false;
      }
      if (end > options_.windowWords) {
        *error = "instruction " + std::to_string(index) +
                 ": MEMCPY reaches host window words [" + std::to_string(aux) +
                 ", " + std::to_string(end) + "), outside the " +
                 std::to_string(options_.windowWords) + "-word window";
        return false;
      }
      // Only the copied rows: the words between them belong to other
      // values and must keep what the host or the NPU last wrote there.
      uint16_t *lanes = reinterpret_cast<uint16_t *>(dma_->data());
      for (uint64_t r = 0; r < rows; ++r) {
        const uint64_t begin = aux + r * stride;
        if (fromHost) {
          // CPU -> device: the float lanes become BF16 in the DMA buffer.
          hw::floatToBf16Row(shadow_.data() + begin * 8, lanes + begin * 8,
                             size_t(a * 8));
        } else {
          toShadow_.push_back({begin, begin + a});
        }
      }
      // One cache-maintenance command for the whole span of rows.
      if (fromHost && !dma_->flush(size_t(aux * 16), size_t((end - aux) * 16),
                                   error))
        return false;
    }
  }
  if (inst.opcode == isa::Opcode::Gemv || inst.opcode == isa::Opcode::Gemm)
    if (!flushPendingWeights(error))
      return false;
  regs_->write64(kv260::kRegInstruction, word);
  regs_->write64(kv260::kRegKick, kv260::kKickWord);
  return true;
}

bool Kv260Device::sync(std::string *error) {
  if (!waitIdle(error))
    return false;
  if (!toShadow_.empty()) {
    // The span the NPU wrote since the last sync, in one command.
    uint64_t lo = UINT64_MAX, hi = 0;
    for (auto &[begin, end] : toShadow_)
      lo = std::min(lo, begin), hi = std::max(hi, end);
    if (!dma_->invalidate(size_t(lo * 16), size_t((hi - lo) * 16), error))
      return false;
    const uint16_t *lanes = reinterpret_cast<const uint16_t *>(dma_->data());
    for (auto &[begin, end] : toShadow_)
      hw::bf16ToFloatRow(lanes + begin * 8, shadow_.data() + begin * 8,
                         size_t((end - begin) * 8));
    toShadow_.clear();
  }
  return true;
}

bool Kv260Device::finishSegment(std::string *error) {
  if (!pendingWeights_.empty()) {
    *error = std::to_string(pendingWeights_.size()) +
             " weight records were queued but no GEMV/GEMM consumed them";
    return false;
  }
  return sync(error);
}

std::unique_ptr<Kv260Device> openKv260(const std::string &uioName,
                                       const std::string &udmabufName,
                                       const std::string &windowCaching,
                                       std::string *error) {
  WindowCaching caching;
  if (!parseWindowCaching(windowCaching, &caching)) {
    *error = "unknown host-window caching '" + windowCaching +
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
  auto dma = openUdmabuf(udmabufName, options.windowWords * 16, caching, error);
  if (!dma)
    return nullptr;
  return Kv260Device::create(std::move(regs), std::move(dma), options, error);
}

} // namespace pccx::device
