# Warning flags for kloop's own code (never applied to candidates).
add_library(kloop_warnings INTERFACE)
target_compile_options(kloop_warnings INTERFACE -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor)
