// Compiled against an installed kloop's ABI header through find_package(kloop) and kloop::abi.
#include <kloop/kernel.h>

#include <cstdio>

#ifndef KL_ABI_VERSION
#error "kloop/kernel.h did not define KL_ABI_VERSION"
#endif

int main() {
    std::printf("kloop ABI %d\n", KL_ABI_VERSION);
    return 0;
}
