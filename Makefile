# pccx-compiler — top-level entry points.
#   make demo   install what is missing (Debian 12), build, run the demo
#   make test   install what is missing, build, run every test
# Both work as root on a fresh machine; as another user they use sudo for apt.

BUILD_DIR ?= build
LLVM_PREFIX ?= /usr/lib/llvm-19
JOBS ?= $(shell nproc)

# Debian 12 packages the build and the tests need (README lists why).
DEB_PACKAGES := cmake ninja-build g++ python3 \
	libmlir-19-dev mlir-19-tools llvm-19-dev llvm-19-tools \
	nlohmann-json3-dev libgtest-dev libxxhash-dev \
	libsentencepiece-dev sentencepiece chromium \
	pkg-config libcpp-httplib-dev curl nodejs npm python3-numpy

SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: all deps configure build runtime-only test demo clean

all: build

# A package counts as installed when it is, or when an installed package
# provides it (e.g. a nodejs build that bundles npm).
deps:
	@provided=$$(dpkg-query -W -f='$${Status}|$${Provides}\n' 2>/dev/null | \
	  sed -n 's/^install ok installed|//p' | tr ',' '\n' | sed 's/ *(.*//; s/^ *//'); \
	missing=""; \
	for p in $(DEB_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || \
	    echo "$$provided" | grep -qx "$$p" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "Installing:$$missing"; \
	  $(SUDO) apt-get update -q && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -q --no-install-recommends $$missing; \
	else echo "All build dependencies are installed."; fi

$(BUILD_DIR)/build.ninja:
	cmake -G Ninja -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=Release \
	  -DMLIR_DIR=$(LLVM_PREFIX)/lib/cmake/mlir -DLLVM_DIR=$(LLVM_PREFIX)/lib/cmake/llvm

configure: deps $(BUILD_DIR)/build.ninja

build: configure
	ninja -C $(BUILD_DIR) -j $(JOBS)

# The board's build (docs/kv260.md): the runtime and its tools without MLIR.
RUNTIME_BUILD_DIR ?= $(BUILD_DIR)-runtime
$(RUNTIME_BUILD_DIR)/build.ninja:
	cmake -G Ninja -S . -B $(RUNTIME_BUILD_DIR) -DCMAKE_BUILD_TYPE=Release -DPCCX_RUNTIME_ONLY=ON

runtime-only: deps $(RUNTIME_BUILD_DIR)/build.ninja
	ninja -C $(RUNTIME_BUILD_DIR) -j $(JOBS)

test: build runtime-only
	ninja -C $(BUILD_DIR) -j $(JOBS) check-pccx

demo: build
	tools/demo.sh $(BUILD_DIR)

clean:
	rm -rf $(BUILD_DIR) $(RUNTIME_BUILD_DIR) demo-out
