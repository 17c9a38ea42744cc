# CMake toolchain file for the board's cores (Cortex-A53, aarch64) with
# Debian's cross toolchain (crossbuild-essential-arm64), for the runtime-only
# configuration:
#
#   tools/cross/aarch64-sysroot.sh BUILD/sysroot
#   cmake -S . -B BUILD -DPCCX_RUNTIME_ONLY=ON \
#     -DCMAKE_TOOLCHAIN_FILE=tools/cross/aarch64-linux-gnu.cmake \
#     -DPCCX_AARCH64_SYSROOT=BUILD/sysroot
#
# Libraries and headers come from the sysroot of unpacked arm64 packages;
# libc and libstdc++ from the cross toolchain. Executables run on this
# machine under qemu-user (CMAKE_CROSSCOMPILING_EMULATOR), which the tests
# use.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)

# try_compile projects re-read this file: hand them the sysroot too.
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES PCCX_AARCH64_SYSROOT)
if(NOT PCCX_AARCH64_SYSROOT)
  message(FATAL_ERROR "PCCX_AARCH64_SYSROOT is not set: make one with tools/cross/aarch64-sysroot.sh DIR")
endif()
set(_sysroot ${PCCX_AARCH64_SYSROOT})
set(_libdirs ${_sysroot}/usr/lib/aarch64-linux-gnu ${_sysroot}/lib/aarch64-linux-gnu)

set(CMAKE_FIND_ROOT_PATH ${_sysroot} /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# The sysroot holds only the unpacked libraries' headers, so it cannot
# shadow the toolchain's libc headers.
set(CMAKE_CXX_FLAGS_INIT "-isystem ${_sysroot}/usr/include -isystem ${_sysroot}/usr/include/aarch64-linux-gnu")
set(CMAKE_C_FLAGS_INIT "${CMAKE_CXX_FLAGS_INIT}")
set(_link "")
foreach(d ${_libdirs})
  string(APPEND _link " -L${d} -Wl,-rpath-link,${d}")
endforeach()
set(CMAKE_EXE_LINKER_FLAGS_INIT "${_link}")
set(CMAKE_SHARED_LINKER_FLAGS_INIT "${_link}")

# pkg-config (cpp-httplib) reads the sysroot's .pc files only.
set(ENV{PKG_CONFIG_LIBDIR} "${_sysroot}/usr/lib/aarch64-linux-gnu/pkgconfig:${_sysroot}/usr/share/pkgconfig")
set(ENV{PKG_CONFIG_SYSROOT_DIR} "${_sysroot}")

string(REPLACE ";" ":" _ldpath "${_libdirs}")
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64 -L /usr/aarch64-linux-gnu
    -E LD_LIBRARY_PATH=${_ldpath})
