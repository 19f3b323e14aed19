// kloop check: typed element load/store (run-time dtype forms; the codecs are in the header).
#include "check/element_access.hpp"

namespace kloop::check {

double load_element(kloop::dtype t, const void* base, std::int64_t i) {
    return visit_dtype(t, [&](auto tag) {
        constexpr kloop::dtype T = decltype(tag)::value;
        return element_codec<T>::decode(load_raw<T>(base, i));
    });
}

void store_element(kloop::dtype t, void* base, std::int64_t i, double v) {
    visit_dtype(t, [&](auto tag) {
        constexpr kloop::dtype T = decltype(tag)::value;
        store_raw<T>(base, i, element_codec<T>::encode(v));
    });
}

double round_to_dtype(kloop::dtype t, double v) {
    unsigned char buf[8];
    store_element(t, buf, 0, v);
    return load_element(t, buf, 0);
}

}  // namespace kloop::check
