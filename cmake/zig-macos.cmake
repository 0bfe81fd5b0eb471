# Configure-only cross build for macOS with zig cc, for scripts/check-macos.sh: it exports the
# compile commands the real macOS build would run (the same CMakeLists, so the same defines,
# include dirs and per-file ISA flags), and the script runs each source's command with -c.
# Nothing is linked: the libraries are macOS ones we do not have here, only their headers.
#   -DTL_ZIG_CC=wrapper     a script that runs `zig cc -target ARCH-macos "$@"`
#   -DTL_MACOS_ARCH=arm64 | x86_64
#   -DTL_MACOS_PC=folder    the .pc files check-macos.sh writes (Homebrew's names, Debian's headers)
# try_compile's projects read this file again: hand them the three.
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES TL_ZIG_CC TL_MACOS_ARCH TL_MACOS_PC)
set(CMAKE_SYSTEM_NAME Darwin)
set(CMAKE_SYSTEM_PROCESSOR ${TL_MACOS_ARCH})
set(CMAKE_C_COMPILER ${TL_ZIG_CC})
# CMake's own checks compile without linking: no macOS libraries to link them against here.
set(CMAKE_TRY_COMPILE_TARGET_TYPE STATIC_LIBRARY)
# no xcrun here: zig brings the macOS SDK's headers itself
set(CMAKE_OSX_SYSROOT "" CACHE PATH "" FORCE)
set(ENV{PKG_CONFIG_LIBDIR} "${TL_MACOS_PC}")
set(ENV{PKG_CONFIG_PATH} "")
set(ENV{PKG_CONFIG_SYSROOT_DIR} "")
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
