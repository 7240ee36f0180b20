//go:build cudaemu && !cuda

// The CPU emulation of the CUDA kernels for the cudaemu test build; see
// emu.h. gpnb_emu_launch runs one kernel by name.
#include "emu.h"

#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

thread_local gpnb_dim3 threadIdx, blockIdx;
gpnb_dim3 blockDim, gridDim;
static const int smemBytes = 48 << 10;
alignas(16) unsigned char smem[smemBytes];
static std::barrier<> *bar;

void __syncthreads() { bar->arrive_and_wait(); }

#include "kernels/gpnb.cu"

typedef const uint64_t *A;
template <class T> static T *P(A a, int i) { return (T *)(uintptr_t)a[i]; }
static i64 I(A a, int i) { return (i64)a[i]; }
static double D(A a, int i) {
    double d;
    memcpy(&d, &a[i], 8);
    return d;
}

struct entry {
    std::function<void(A)> fn;
    bool sync; // uses __syncthreads: run the block's threads concurrently
};

#define SCALE(T, S) {"gpnb_scale_" #S, {[](A a) { gpnb_scale_##S(P<const double>(a, 0), I(a, 1), I(a, 2), P<const double>(a, 3), P<const double>(a, 4), P<T>(a, 5)); }, false}}
#define MULFREE_E(T, S, DD, C) {"gpnb_mulfree_" #S "_d" #DD "_c" #C, {[](A a) { gpnb_mulfree_##S##_d##DD##_c##C(P<const T>(a, 0), P<const i64>(a, 1), I(a, 2), P<const T>(a, 3), P<const i64>(a, 4), I(a, 5), I(a, 6), I(a, 7), D(a, 8), P<const T>(a, 9), I(a, 10), P<const T>(a, 11), D(a, 12), P<T>(a, 13), I(a, 14), I(a, 15), I(a, 16), P<T>(a, 17)); }, true}}
#define BUILD(T, S) {"gpnb_build_" #S, {[](A a) { gpnb_build_##S(P<const T>(a, 0), I(a, 1), I(a, 2), I(a, 3), D(a, 4), P<T>(a, 5)); }, false}}
#define MULDENSE_E(T, S, C) {"gpnb_muldense_" #S "_c" #C, {[](A a) { gpnb_muldense_##S##_c##C(P<const T>(a, 0), I(a, 1), P<const i64>(a, 2), I(a, 3), P<const i64>(a, 4), I(a, 5), P<const T>(a, 6), I(a, 7), P<const T>(a, 8), D(a, 9), P<T>(a, 10), I(a, 11), I(a, 12), I(a, 13), P<T>(a, 14)); }, true}}
#define SUMPARTS(T, S) {"gpnb_sumparts_" #S, {[](A a) { gpnb_sumparts_##S(P<const T>(a, 0), I(a, 1), I(a, 2), I(a, 3), P<const i64>(a, 4), P<const T>(a, 5), D(a, 6), P<T>(a, 7)); }, false}}
#define BLOCK(T, S) {"gpnb_block_" #S, {[](A a) { gpnb_block_##S(P<const T>(a, 0), P<const T>(a, 1), I(a, 2), I(a, 3), I(a, 4), D(a, 5), D(a, 6), P<const i64>(a, 7), I(a, 8), P<double>(a, 9)); }, false}}
#define REDUCE_E(T, S, DD) {"gpnb_reduce_" #S "_d" #DD, {[](A a) { gpnb_reduce_##S##_d##DD(P<const T>(a, 0), I(a, 1), I(a, 2), I(a, 3), P<const T>(a, 4), P<const T>(a, 5), I(a, 6), P<const T>(a, 7), P<double>(a, 8), I(a, 9)); }, true}}

static const std::map<std::string, entry> table = {
    SCALE(double, f64), SCALE(float, f32),
    MULFREE_E(double, f64, 8, 16), MULFREE_E(double, f64, 32, 16), MULFREE_E(double, f64, 0, 16),
    MULFREE_E(float, f32, 8, 16), MULFREE_E(float, f32, 32, 16), MULFREE_E(float, f32, 0, 16),
    MULFREE_E(double, f64, 8, 32), MULFREE_E(double, f64, 32, 32), MULFREE_E(double, f64, 0, 32),
    MULFREE_E(float, f32, 8, 32), MULFREE_E(float, f32, 32, 32), MULFREE_E(float, f32, 0, 32),
    BUILD(double, f64), BUILD(float, f32),
    MULDENSE_E(double, f64, 16), MULDENSE_E(float, f32, 16), MULDENSE_E(double, f64, 32), MULDENSE_E(float, f32, 32),
    BLOCK(double, f64), BLOCK(float, f32), SUMPARTS(double, f64), SUMPARTS(float, f32),
    REDUCE_E(double, f64, 8), REDUCE_E(double, f64, 32), REDUCE_E(double, f64, 0),
    REDUCE_E(float, f32, 8), REDUCE_E(float, f32, 32), REDUCE_E(float, f32, 0),
};

// gpnb_emu_launch returns 0, or 1 for an unknown kernel, 2 for more shared
// memory than a GPU gives without opt-in (48 KiB), 3 for a bad geometry.
extern "C" int gpnb_emu_launch(const char *name, int gx, int gy, int bx, int by, int shared, const uint64_t *args) {
    auto it = table.find(name);
    if (it == table.end())
        return 1;
    if (shared > smemBytes)
        return 2;
    if (gx < 1 || gy < 1 || gy > 65535 || bx < 1 || by < 1 || bx * by > 1024)
        return 3;
    const entry &e = it->second;
    blockDim = {(unsigned)bx, (unsigned)by, 1};
    gridDim = {(unsigned)gx, (unsigned)gy, 1};
    int nt = bx * by;
    for (int y = 0; y < gy; y++)
        for (int x = 0; x < gx; x++) {
            // Poison shared memory so a read before a write shows up.
            memset(smem, 0xff, sizeof smem);
            if (!e.sync) {
                blockIdx = {(unsigned)x, (unsigned)y, 0};
                for (int ty = 0; ty < by; ty++)
                    for (int tx = 0; tx < bx; tx++) {
                        threadIdx = {(unsigned)tx, (unsigned)ty, 0};
                        e.fn(args);
                    }
                continue;
            }
            std::barrier<> b(nt);
            bar = &b;
            std::vector<std::thread> ts;
            ts.reserve(nt);
            for (int ty = 0; ty < by; ty++)
                for (int tx = 0; tx < bx; tx++)
                    ts.emplace_back([&, x, y, tx, ty] {
                        blockIdx = {(unsigned)x, (unsigned)y, 0};
                        threadIdx = {(unsigned)tx, (unsigned)ty, 0};
                        e.fn(args);
                    });
            for (auto &t : ts)
                t.join();
        }
    return 0;
}

// gpnb_emu_has reports whether the emulation knows kernel name.
extern "C" int gpnb_emu_has(const char *name) { return table.count(name) ? 1 : 0; }
