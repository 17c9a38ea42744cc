# pccx-compiler — top-level entry points.
#   make demo   install what is missing (Debian 12), build, run the demo
#   make test   install what is missing, build, run every test
# Both work as root on a fresh machine; as another user they use sudo for apt.

BUILD_DIR ?= build
LLVM_PREFIX ?= /usr/lib/llvm-19
JOBS ?= $(shell nproc)

# Debian 12 packages the build needs, and those only the tests use (README
# lists why): `make demo` installs the first, `make test` both.
DEB_PACKAGES := cmake ninja-build g++ python3 \
	libmlir-19-dev mlir-19-tools llvm-19-dev llvm-19-tools \
	nlohmann-json3-dev libgtest-dev libxxhash-dev \
	libsentencepiece-dev sentencepiece \
	pkg-config libcpp-httplib-dev libedit-dev
TEST_DEB_PACKAGES := chromium curl nodejs npm python3-numpy python3-venv

# Only for the fuzz and sanitizer targets (not needed by `make test`):
# Debian's clang with its libFuzzer and sanitizer runtimes.
FUZZ_DEB_PACKAGES := clang-19 libclang-rt-19-dev

SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: all deps test-deps configure build install runtime-only aarch64 aarch64-deps test demo clean \
	fuzz-deps fuzz-build fuzz-replay fuzz-smoke test-sanitize FORCE

all: build

deps:
	@$(MAKE) --no-print-directory install-packages PACKAGES="$(DEB_PACKAGES)"

test-deps:
	@$(MAKE) --no-print-directory install-packages PACKAGES="$(TEST_DEB_PACKAGES)"

fuzz-deps:
	@$(MAKE) --no-print-directory install-packages PACKAGES="$(FUZZ_DEB_PACKAGES)"

# A package counts as installed when it is, or when an installed package
# provides it (e.g. a nodejs build that bundles npm).
.PHONY: install-packages
install-packages:
	@provided=$$(dpkg-query -W -f='$${Status}|$${Provides}\n' 2>/dev/null | \
	  sed -n 's/^install ok installed|//p' | tr ',' '\n' | sed 's/ *(.*//; s/^ *//'); \
	missing=""; \
	for p in $(PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || \
	    echo "$$provided" | grep -qx "$$p" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "Installing:$$missing"; \
	  $(SUDO) apt-get update -q && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -q --no-install-recommends $$missing; \
	else echo "All build dependencies are installed."; fi

# A build tree whose cache was configured from another checkout (a copied
# worktree, a moved directory) would keep building and testing that
# checkout's sources; its cache is dropped so cmake configures it from this
# one. Every tree's rule runs this first.
define configure-here
	@if [ -f $(1)/CMakeCache.txt ] && ! grep -qxF \
	    'CMAKE_HOME_DIRECTORY:INTERNAL=$(CURDIR)' $(1)/CMakeCache.txt; then \
	  echo "$(1) was configured from another source tree: configuring it from $(CURDIR)"; \
	  rm -rf $(1)/CMakeCache.txt $(1)/CMakeFiles $(1)/build.ninja; \
	fi
endef

$(BUILD_DIR)/build.ninja: FORCE
	$(call configure-here,$(BUILD_DIR))
	[ -f $@ ] || cmake -G Ninja -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=Release \
	  -DMLIR_DIR=$(LLVM_PREFIX)/lib/cmake/mlir -DLLVM_DIR=$(LLVM_PREFIX)/lib/cmake/llvm

configure: deps $(BUILD_DIR)/build.ninja

build: configure
	ninja -C $(BUILD_DIR) -j $(JOBS)

# Installs the tools (PREFIX/bin), libpccxrt with its header (PREFIX/lib,
# PREFIX/include) and the Python module (PREFIX/lib/python3/dist-packages);
# DESTDIR stages it elsewhere, as packagers expect.
PREFIX ?= /usr/local
install: build
	DESTDIR="$(DESTDIR)" cmake --install $(BUILD_DIR) --prefix "$(PREFIX)"

# The board's build (docs/kv260.md): the runtime and its tools without MLIR.
RUNTIME_BUILD_DIR ?= $(BUILD_DIR)-runtime
$(RUNTIME_BUILD_DIR)/build.ninja: FORCE
	$(call configure-here,$(RUNTIME_BUILD_DIR))
	[ -f $@ ] || cmake -G Ninja -S . -B $(RUNTIME_BUILD_DIR) -DCMAKE_BUILD_TYPE=Release -DPCCX_RUNTIME_ONLY=ON

runtime-only: deps $(RUNTIME_BUILD_DIR)/build.ninja
	ninja -C $(RUNTIME_BUILD_DIR) -j $(JOBS)

# The board's cores (docs/kv260.md): the runtime-only configuration with
# its tests, cross-built for aarch64 with Debian's cross toolchain; the
# tests run here under qemu-user. Debian's arm64 libraries are unpacked into
# a sysroot in the tree (tools/cross/aarch64-sysroot.sh), never installed.
# The tests compile their models with this machine's pccx-compile.
AARCH64_BUILD_DIR ?= $(BUILD_DIR)-aarch64
AARCH64_DEB_PACKAGES := crossbuild-essential-arm64 qemu-user
aarch64-deps:
	@$(MAKE) --no-print-directory install-packages PACKAGES="$(AARCH64_DEB_PACKAGES)"
	tools/cross/aarch64-sysroot.sh $(AARCH64_BUILD_DIR)/sysroot

$(AARCH64_BUILD_DIR)/build.ninja: FORCE
	$(call configure-here,$(AARCH64_BUILD_DIR))
	[ -f $@ ] || cmake -G Ninja -S . -B $(AARCH64_BUILD_DIR) -DCMAKE_BUILD_TYPE=Release \
	  -DPCCX_RUNTIME_ONLY=ON \
	  -DCMAKE_TOOLCHAIN_FILE=$(CURDIR)/tools/cross/aarch64-linux-gnu.cmake \
	  -DPCCX_AARCH64_SYSROOT=$(abspath $(AARCH64_BUILD_DIR))/sysroot \
	  -DPCCX_COMPILER_TOOLS_DIR=$(abspath $(BUILD_DIR))/bin

aarch64: deps aarch64-deps $(AARCH64_BUILD_DIR)/build.ninja
	ninja -C $(AARCH64_BUILD_DIR) -j $(JOBS) all pccx-test-depends

# One run, one summary line: this machine's suites and, beside them, the
# aarch64 build's under qemu-user.
test: test-deps build aarch64
	PCCX_EXTRA_SUITES="$(abspath $(AARCH64_BUILD_DIR))/test/unit $(abspath $(AARCH64_BUILD_DIR))/test" \
	  ninja -C $(BUILD_DIR) -j $(JOBS) check-pccx

# libFuzzer targets (test/fuzz/README.md) in their own clang tree with ASan
# and UBSan; only the fuzz targets and what they link are built (the IR
# target links the dialects, hence MLIR). Both sanitizer trees are
# configured on every run (seconds), so that a tree made by an older
# Makefile gets the current options.
FUZZ_BUILD_DIR ?= $(BUILD_DIR)-fuzz
FUZZ_SECONDS ?= 30
FUZZ_TARGETS := safetensors shard-index config isa asm bundle ir http tokenizer json-schema
SANITIZE_FLAGS := -fsanitize=address,undefined -fsanitize=float-cast-overflow \
	-fno-sanitize-recover=all -fno-omit-frame-pointer -g1
$(FUZZ_BUILD_DIR)/build.ninja: FORCE
	$(call configure-here,$(FUZZ_BUILD_DIR))
	CC=clang-19 CXX=clang++-19 cmake -G Ninja -S . -B $(FUZZ_BUILD_DIR) \
	  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPCCX_RUNTIME_ONLY=OFF -DPCCX_FUZZ=ON \
	  -DMLIR_DIR=$(LLVM_PREFIX)/lib/cmake/mlir -DLLVM_DIR=$(LLVM_PREFIX)/lib/cmake/llvm \
	  -DCMAKE_CXX_FLAGS="-fsanitize=fuzzer-no-link $(SANITIZE_FLAGS)"

fuzz-build: deps fuzz-deps $(FUZZ_BUILD_DIR)/build.ninja
	ninja -C $(FUZZ_BUILD_DIR) -j $(JOBS) $(addprefix fuzz-,$(FUZZ_TARGETS))

# Every target over its committed seed corpus (seconds).
fuzz-replay: fuzz-build
	FUZZ_TARGETS="$(FUZZ_TARGETS)" bench/fuzz.sh 0 $(FUZZ_BUILD_DIR)

# Every target for FUZZ_SECONDS from its seeds: no crash, leak or report.
fuzz-smoke: fuzz-build
	FUZZ_TARGETS="$(FUZZ_TARGETS)" bench/fuzz.sh $(FUZZ_SECONDS) $(FUZZ_BUILD_DIR)

# The whole suite built with clang-19, ASan + UBSan (float-cast-overflow
# included), in its own tree. Everything links the shared sanitizer runtime
# so that a host process that is not instrumented (python3 loading
# libpccxrt.so in the tests) can preload the same one.
SANITIZE_BUILD_DIR ?= $(BUILD_DIR)-sanitize
SANITIZE_RUNTIME = $(shell clang++-19 -print-file-name=libclang_rt.asan-$(shell uname -m).so)
SANITIZE_LINK_FLAGS = $(SANITIZE_FLAGS) -shared-libsan -Wl,-rpath,$(dir $(SANITIZE_RUNTIME))
$(SANITIZE_BUILD_DIR)/build.ninja: FORCE
	$(call configure-here,$(SANITIZE_BUILD_DIR))
	CC=clang-19 CXX=clang++-19 cmake -G Ninja -S . -B $(SANITIZE_BUILD_DIR) \
	  -DCMAKE_BUILD_TYPE=Release \
	  -DMLIR_DIR=$(LLVM_PREFIX)/lib/cmake/mlir -DLLVM_DIR=$(LLVM_PREFIX)/lib/cmake/llvm \
	  -DCMAKE_CXX_FLAGS="$(SANITIZE_FLAGS)" \
	  -DCMAKE_EXE_LINKER_FLAGS="$(SANITIZE_LINK_FLAGS)" \
	  -DCMAKE_SHARED_LINKER_FLAGS="$(SANITIZE_LINK_FLAGS)" \
	  -DPCCX_SANITIZER_RUNTIME=$(SANITIZE_RUNTIME)

# allow_user_poisoning=0: LLVM's allocators poison their slabs when compiled
# with ASan, as their inline copies in the project's code are, but not in the
# uninstrumented libMLIR that shares them; the vptr check is suppressed for
# the same libraries (test/ubsan.supp).
test-sanitize: deps test-deps fuzz-deps $(SANITIZE_BUILD_DIR)/build.ninja
	ASAN_OPTIONS=detect_leaks=0:abort_on_error=0:allow_user_poisoning=0 \
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:suppressions=$(CURDIR)/test/ubsan.supp \
	PCCX_REUSE_PROGRAMS=6 \
	  ninja -C $(SANITIZE_BUILD_DIR) -j $(JOBS) check-pccx

demo: build
	tools/demo.sh $(BUILD_DIR)

FORCE:

clean:
	rm -rf $(BUILD_DIR) $(RUNTIME_BUILD_DIR) $(FUZZ_BUILD_DIR) \
	  $(SANITIZE_BUILD_DIR) $(AARCH64_BUILD_DIR) demo-out
