# Third-party dependencies, all from Debian 12 packages (scripts/install-deps.sh installs them).
find_package(Threads REQUIRED)
find_package(fmt 9 REQUIRED)               # libfmt-dev; used header-only (no shared libfmt at run time)
find_package(nlohmann_json 3.11 REQUIRED)  # nlohmann-json3-dev
find_package(CLI11 2.1 REQUIRED)           # libcli11-dev
# libtomlplusplus-dev: used header-only (TOML_HEADER_ONLY=1) so no libtomlplusplus.so is needed at run time.
find_path(KLOOP_TOMLPP_INCLUDE_DIR NAMES toml++/toml.h REQUIRED)
add_library(kloop_tomlpp INTERFACE)
target_include_directories(kloop_tomlpp SYSTEM INTERFACE ${KLOOP_TOMLPP_INCLUDE_DIR})
target_compile_definitions(kloop_tomlpp INTERFACE TOML_HEADER_ONLY=1 TOML_EXCEPTIONS=1)

# OpenSSL's libcrypto (SHA-256), linked statically so the binaries need no libssl on the GPU host.
find_library(KLOOP_LIBCRYPTO_STATIC NAMES libcrypto.a REQUIRED)
add_library(kloop_crypto INTERFACE)
target_link_libraries(kloop_crypto INTERFACE ${KLOOP_LIBCRYPTO_STATIC} ${CMAKE_DL_LIBS} Threads::Threads)

if(KLOOP_BUILD_TESTS)
  find_package(GTest REQUIRED)             # libgtest-dev, libgmock-dev
endif()

# SQLite3 (libsqlite3-dev) for the strategy memory, linked statically so the binaries need no
# libsqlite3.so on the GPU host.
find_library(KLOOP_LIBSQLITE3_STATIC NAMES libsqlite3.a REQUIRED)
find_path(KLOOP_SQLITE3_INCLUDE_DIR NAMES sqlite3.h REQUIRED)
add_library(kloop_sqlite3 INTERFACE)
target_include_directories(kloop_sqlite3 SYSTEM INTERFACE ${KLOOP_SQLITE3_INCLUDE_DIR})
target_link_libraries(kloop_sqlite3 INTERFACE ${KLOOP_LIBSQLITE3_STATIC} ${CMAKE_DL_LIBS} Threads::Threads m)
