// Matrix types shared by the engine, its backends and its readers and writers.
#pragma once

#include <cstdint>

#include "attnscope/eigen.h"

namespace attnscope {

// float32 in compute, as on the GPU. Row-major so that a matrix's memory is the layout of
// GPU buffers, NPY files and JSON lists of rows alike.
using Matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using RowVector = Eigen::Matrix<float, 1, Eigen::Dynamic>;
// 1 = may attend, 0 = masked. (n_q, n_k).
using MaskMatrix = Eigen::Matrix<std::uint8_t, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

}  // namespace attnscope
