// Test helper: read a PNG (8-bit RGB or RGBA, not interlaced — what Chromium's --screenshot
// writes) into RGB pixels, by inflating its IDAT chunks with zlib and undoing the row filters;
// and find the plot frames of report.html in it.
#pragma once

#include <zlib.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

namespace kloop::testing {

struct rgb {
    std::uint8_t r = 0, g = 0, b = 0;
    bool operator==(const rgb&) const = default;
};

struct png_image {
    int width = 0, height = 0;
    std::vector<rgb> pixels;  // row-major
    [[nodiscard]] const rgb& at(int x, int y) const { return pixels[static_cast<std::size_t>(y) * width + x]; }
};

inline std::uint32_t be32(const std::string& s, std::size_t at) {
    return (std::uint32_t(std::uint8_t(s[at])) << 24) | (std::uint32_t(std::uint8_t(s[at + 1])) << 16) |
           (std::uint32_t(std::uint8_t(s[at + 2])) << 8) | std::uint32_t(std::uint8_t(s[at + 3]));
}

// Throws std::runtime_error for anything but an 8-bit RGB/RGBA non-interlaced PNG.
inline png_image decode_png(const std::string& file) {
    static const std::string signature = "\x89PNG\r\n\x1a\n";
    if (file.compare(0, 8, signature) != 0) throw std::runtime_error("not a PNG");
    png_image img;
    int channels = 0;
    std::string idat;
    for (std::size_t at = 8; at + 8 <= file.size();) {
        const std::uint32_t len = be32(file, at);
        const std::string type = file.substr(at + 4, 4);
        if (at + 12 + len > file.size()) throw std::runtime_error("truncated chunk " + type);
        const std::string data = file.substr(at + 8, len);
        if (type == "IHDR") {
            img.width = static_cast<int>(be32(data, 0));
            img.height = static_cast<int>(be32(data, 4));
            const int depth = std::uint8_t(data[8]), colour = std::uint8_t(data[9]), interlace = std::uint8_t(data[12]);
            if (depth != 8 || interlace != 0 || (colour != 2 && colour != 6))
                throw std::runtime_error("unsupported PNG: depth " + std::to_string(depth) + ", colour type " + std::to_string(colour));
            channels = colour == 6 ? 4 : 3;
        } else if (type == "IDAT") {
            idat += data;
        } else if (type == "IEND") {
            break;
        }
        at += 12 + len;
    }
    if (channels == 0 || img.width <= 0 || img.height <= 0) throw std::runtime_error("no IHDR");
    const std::size_t stride = static_cast<std::size_t>(img.width) * channels;
    std::vector<std::uint8_t> raw((stride + 1) * img.height);
    uLongf raw_len = raw.size();
    if (uncompress(raw.data(), &raw_len, reinterpret_cast<const Bytef*>(idat.data()), idat.size()) != Z_OK || raw_len != raw.size())
        throw std::runtime_error("IDAT does not inflate to the image's size");
    std::vector<std::uint8_t> prev(stride, 0), cur(stride);
    img.pixels.resize(static_cast<std::size_t>(img.width) * img.height);
    for (int y = 0; y < img.height; ++y) {
        const std::uint8_t* row = raw.data() + y * (stride + 1);
        const int filter = row[0];
        for (std::size_t i = 0; i < stride; ++i) {
            const int a = i >= static_cast<std::size_t>(channels) ? cur[i - channels] : 0;
            const int b = prev[i];
            const int c = i >= static_cast<std::size_t>(channels) ? prev[i - channels] : 0;
            int pred = 0;
            switch (filter) {
            case 0: pred = 0; break;
            case 1: pred = a; break;
            case 2: pred = b; break;
            case 3: pred = (a + b) / 2; break;
            case 4: {
                const int p = a + b - c, pa = std::abs(p - a), pb = std::abs(p - b), pc = std::abs(p - c);
                pred = pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
                break;
            }
            default: throw std::runtime_error("bad PNG filter " + std::to_string(filter));
            }
            cur[i] = static_cast<std::uint8_t>(row[1 + i] + pred);
        }
        for (int x = 0; x < img.width; ++x) {
            const std::uint8_t* p = cur.data() + static_cast<std::size_t>(x) * channels;
            img.pixels[static_cast<std::size_t>(y) * img.width + x] = {p[0], p[1], p[2]};
        }
        std::swap(prev, cur);
    }
    return img;
}

struct box {
    int x0 = 0, y0 = 0, x1 = 0, y1 = 0;  // inclusive
    [[nodiscard]] int width() const { return x1 - x0 + 1; }
    [[nodiscard]] int height() const { return y1 - y0 + 1; }
};

// The bounding boxes of the connected regions (4-neighbour) of pixels of exactly `colour` whose
// box is at least min_w × min_h: report.html draws each plot area's frame in one colour no other
// part of the page uses.
inline std::vector<box> frames_of(const png_image& img, rgb colour, int min_w, int min_h) {
    std::vector<box> out;
    std::vector<std::uint8_t> seen(img.pixels.size(), 0);
    std::vector<int> stack;
    for (int start = 0; start < static_cast<int>(img.pixels.size()); ++start) {
        if (seen[start] || !(img.pixels[start] == colour)) continue;
        box b{start % img.width, start / img.width, start % img.width, start / img.width};
        stack.push_back(start);
        seen[start] = 1;
        while (!stack.empty()) {
            const int p = stack.back();
            stack.pop_back();
            const int x = p % img.width, y = p / img.width;
            b.x0 = std::min(b.x0, x), b.x1 = std::max(b.x1, x), b.y0 = std::min(b.y0, y), b.y1 = std::max(b.y1, y);
            const std::array<std::pair<int, int>, 4> next{{{x - 1, y}, {x + 1, y}, {x, y - 1}, {x, y + 1}}};
            for (const auto& [nx, ny] : next) {
                if (nx < 0 || ny < 0 || nx >= img.width || ny >= img.height) continue;
                const int q = ny * img.width + nx;
                if (!seen[q] && img.pixels[q] == colour) {
                    seen[q] = 1;
                    stack.push_back(q);
                }
            }
        }
        if (b.width() >= min_w && b.height() >= min_h) out.push_back(b);
    }
    return out;
}

// Pixels inside the box (its 2-pixel border left out) that are coloured — the channels differ by
// more than 40 — unlike the page's white and the charts' greys (background, grid, frame, text).
inline int coloured_pixels(const png_image& img, const box& b) {
    int n = 0;
    for (int y = b.y0 + 2; y <= b.y1 - 2; ++y)
        for (int x = b.x0 + 2; x <= b.x1 - 2; ++x) {
            const auto& p = img.at(x, y);
            const int hi = std::max({p.r, p.g, p.b}), lo = std::min({p.r, p.g, p.b});
            if (hi - lo > 40) ++n;
        }
    return n;
}

}  // namespace kloop::testing
