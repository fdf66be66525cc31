// Matrix types shared by the engine, its backends and its readers and writers.
#pragma once

// GCC 12's AVX-512 intrinsics header, inlined through Eigen's vectorised max and exp, trips
// -Wmaybe-uninitialized on its own _mm512_undefined_ps() (GCC bug 105593, fixed in GCC 13) wherever
// -march enables AVX-512. Silenced for the text of Eigen's headers alone: our own code keeps the warning.
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <Eigen/Core>
#pragma GCC diagnostic pop
#else
#include <Eigen/Core>
#endif
#include <cstdint>

namespace attnscope {

// float32 in compute, as on the GPU. Row-major so that a matrix's memory is the layout of
// GPU buffers, NPY files and JSON lists of rows alike.
using Matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using RowVector = Eigen::Matrix<float, 1, Eigen::Dynamic>;
// 1 = may attend, 0 = masked. (n_q, n_k).
using MaskMatrix = Eigen::Matrix<std::uint8_t, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

}  // namespace attnscope
