// kloop check: a host buffer with canary red zones on both sides, and poisoning.
//
// Responsibility: memory for one tensor whose out-of-bounds writes are detectable after the
// fact. Layout of one allocation (64-byte aligned):
//
//   [ front red zone | data (bytes()) | back red zone ]
//
// The front zone is redzone_bytes rounded up to a multiple of 64, so data() is 64-byte aligned;
// the back zone is exactly redzone_bytes and starts at the first byte past the data, so a
// one-byte overrun is caught. Both zones hold a position-dependent canary pattern (bytes in
// 0x80..0xFE, never 0x00 or 0xFF, so neither zeroing nor 0xFF poison nor a shifted copy of the
// pattern looks intact). poison() fills the data with values a correct kernel must overwrite:
// 0xFF in every byte, a NaN in every float dtype and -1 in the integer ones, the same pattern a
// device mirror gets from a memset. Move-only.
//
// Filling the data (zeros at construction, poison) runs in 1 MiB chunks on
// thread_pool::shared(): for the hundreds of MB of a large GPU tensor this is also the first
// touch of every page, which one core does slowly.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>

#include "core/dtype.hpp"

namespace kloop::check {

class guarded_buffer {
public:
    // What the data holds after construction.
    enum class initial_contents { zeros, poison };

    // Throws std::invalid_argument on a negative count.
    guarded_buffer(kloop::dtype t, std::int64_t n_elems, std::size_t redzone_bytes = 256,
                   initial_contents contents = initial_contents::zeros);
    guarded_buffer(guarded_buffer&& other) noexcept;
    guarded_buffer& operator=(guarded_buffer&& other) noexcept;
    guarded_buffer(const guarded_buffer&) = delete;
    guarded_buffer& operator=(const guarded_buffer&) = delete;
    ~guarded_buffer();

    void* data() { return m_data; }
    [[nodiscard]] const void* data() const { return m_data; }
    [[nodiscard]] std::int64_t size() const { return m_n_elems; }
    [[nodiscard]] std::size_t bytes() const { return m_bytes; }
    [[nodiscard]] kloop::dtype get_type() const { return m_type; }
    // The guard size requested at construction (the back zone's size; the front one may be larger).
    [[nodiscard]] std::size_t get_redzone_bytes() const { return m_back_bytes; }

    // The whole allocation, red zones included (front zone first): what a device mirror copies.
    [[nodiscard]] unsigned char* get_block() { return m_block.get(); }
    [[nodiscard]] const unsigned char* get_block() const { return m_block.get(); }
    [[nodiscard]] std::size_t get_block_bytes() const { return m_front_bytes + m_bytes + m_back_bytes; }
    [[nodiscard]] std::size_t get_front_bytes() const { return m_front_bytes; }

    void poison();
    // Rewrites both canaries (after a detected violation, to reuse the buffer).
    void reset_redzones();

    [[nodiscard]] bool redzones_intact() const;
    // Byte offset of the lowest-addressed damaged canary byte, relative to data(): negative in
    // the front zone (-1 = the byte just before data()), >= bytes() in the back zone (bytes() =
    // the first byte past the end). nullopt when both zones are intact.
    [[nodiscard]] std::optional<std::int64_t> first_redzone_violation() const;
    // How many canary bytes differ from the pattern, both zones together.
    [[nodiscard]] std::size_t count_redzone_violations() const;

private:
    struct aligned_delete {
        void operator()(unsigned char* p) const noexcept;
    };

    kloop::dtype m_type = kloop::dtype::f32;
    std::int64_t m_n_elems = 0;
    std::size_t m_bytes = 0;
    std::size_t m_front_bytes = 0;
    std::size_t m_back_bytes = 0;
    std::unique_ptr<unsigned char[], aligned_delete> m_block;
    unsigned char* m_data = nullptr;
};

}  // namespace kloop::check
