# Cross build for 64-bit ARM Linux with Debian's cross gcc and the arm64 multiarch -dev packages
# (scripts/test-arm64.sh installs both): the libraries come from /usr/lib/aarch64-linux-gnu, found
# by pkg-config through the arm64 .pc files only, and the tests run under qemu-aarch64.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
# The host's .pc files would hand out x86-64 libraries: arm64 ones only.
set(ENV{PKG_CONFIG_LIBDIR} "/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig")
set(ENV{PKG_CONFIG_PATH} "")
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
# ctest runs a test whose command is a target through this. No -L /usr/aarch64-linux-gnu: the
# binaries load the multiarch libc6:arm64 (/lib/ld-linux-aarch64.so.1) the -dev packages brought,
# as their other libraries; with the cross toolchain's older libc there instead, creating a second
# thread hung under qemu 7.2.
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64)
# Debian 12's gcc 12.2 for aarch64 stops with an internal compiler error (vect_transform_reduction)
# vectorizing a loop that reduces with fmax over floats widened to double, as several tests do;
# 12.3 fixed it. The kernels' vectors are written out (intrinsics, vector types), so leaving loop
# vectorization to them changes no result a test checks.
if(NOT DEFINED CMAKE_C_FLAGS_INIT)
  set(CMAKE_C_FLAGS_INIT "-fno-tree-loop-vectorize")
endif()
