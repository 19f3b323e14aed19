// kloop check: guarded host buffers.
#include "check/guarded_buffer.hpp"

#include <new>
#include <stdexcept>
#include <string>
#include <utility>

#include "check/half.hpp"
#include "core/thread_pool.hpp"

namespace kloop::check {

namespace {

constexpr std::size_t alignment = 64;

// Canary byte for position k of a zone, counted from the zone's own start. Front and back zones
// use different phases so a copy of one zone over the other is noticed too.
unsigned char canary(std::size_t k, std::size_t phase) {
    return static_cast<unsigned char>(0x80u | ((k * 29u + phase) % 0x7Fu));
}

constexpr std::size_t front_phase = 0x35;
constexpr std::size_t back_phase = 0x4A;

}  // namespace

void guarded_buffer::aligned_delete::operator()(unsigned char* p) const noexcept {
    ::operator delete[](p, std::align_val_t{alignment});
}

guarded_buffer::guarded_buffer(kloop::dtype t, std::int64_t n_elems, std::size_t redzone_bytes,
                               initial_contents contents)
    : m_type(t), m_n_elems(n_elems) {
    if (n_elems < 0) throw std::invalid_argument("guarded_buffer: negative element count " + std::to_string(n_elems));
    m_bytes = static_cast<std::size_t>(n_elems) * size_bytes(t);
    m_front_bytes = (redzone_bytes + alignment - 1) / alignment * alignment;
    m_back_bytes = redzone_bytes;
    const std::size_t total = m_front_bytes + m_bytes + m_back_bytes;
    m_block.reset(static_cast<unsigned char*>(::operator new[](total == 0 ? 1 : total, std::align_val_t{alignment})));
    m_data = m_block.get() + m_front_bytes;
    if (contents == initial_contents::poison) poison();
    else parallel_memset(m_data, 0, m_bytes);
    reset_redzones();
}

guarded_buffer::guarded_buffer(guarded_buffer&& other) noexcept
    : m_type(other.m_type),
      m_n_elems(std::exchange(other.m_n_elems, 0)),
      m_bytes(std::exchange(other.m_bytes, 0)),
      m_front_bytes(std::exchange(other.m_front_bytes, 0)),
      m_back_bytes(std::exchange(other.m_back_bytes, 0)),
      m_block(std::move(other.m_block)),
      m_data(std::exchange(other.m_data, nullptr)) {}

guarded_buffer& guarded_buffer::operator=(guarded_buffer&& other) noexcept {
    if (this != &other) {
        m_type = other.m_type;
        m_n_elems = std::exchange(other.m_n_elems, 0);
        m_bytes = std::exchange(other.m_bytes, 0);
        m_front_bytes = std::exchange(other.m_front_bytes, 0);
        m_back_bytes = std::exchange(other.m_back_bytes, 0);
        m_block = std::move(other.m_block);
        m_data = std::exchange(other.m_data, nullptr);
    }
    return *this;
}

guarded_buffer::~guarded_buffer() = default;

void guarded_buffer::poison() {
    // One pattern for every dtype and every place a buffer lives: 0xFF in every byte is a NaN in
    // f16, bf16, f32 and f64 (all exponent bits set, a non-zero mantissa) and the integers' -1.
    // A device mirror is poisoned with the same memset (runner::executor_base::fill), so no call
    // can tell from its outputs' bytes how they were poisoned.
    if (m_data == nullptr) return;
    parallel_memset(m_data, 0xFF, m_bytes);
}

void guarded_buffer::reset_redzones() {
    if (m_data == nullptr) return;
    unsigned char* front = m_data - m_front_bytes;
    for (std::size_t k = 0; k < m_front_bytes; ++k) front[k] = canary(k, front_phase);
    unsigned char* back = m_data + m_bytes;
    for (std::size_t k = 0; k < m_back_bytes; ++k) back[k] = canary(k, back_phase);
}

std::optional<std::int64_t> guarded_buffer::first_redzone_violation() const {
    if (m_data == nullptr) return std::nullopt;
    const unsigned char* front = m_data - m_front_bytes;
    for (std::size_t k = 0; k < m_front_bytes; ++k)
        if (front[k] != canary(k, front_phase))
            return static_cast<std::int64_t>(k) - static_cast<std::int64_t>(m_front_bytes);
    const unsigned char* back = m_data + m_bytes;
    for (std::size_t k = 0; k < m_back_bytes; ++k)
        if (back[k] != canary(k, back_phase)) return static_cast<std::int64_t>(m_bytes + k);
    return std::nullopt;
}

std::size_t guarded_buffer::count_redzone_violations() const {
    if (m_data == nullptr) return 0;
    std::size_t bad = 0;
    const unsigned char* front = m_data - m_front_bytes;
    for (std::size_t k = 0; k < m_front_bytes; ++k) bad += front[k] != canary(k, front_phase);
    const unsigned char* back = m_data + m_bytes;
    for (std::size_t k = 0; k < m_back_bytes; ++k) bad += back[k] != canary(k, back_phase);
    return bad;
}

bool guarded_buffer::redzones_intact() const { return !first_redzone_violation().has_value(); }

}  // namespace kloop::check
