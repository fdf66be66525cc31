// Which keys each query may attend, evaluated from indices: causal (with a sliding window) from i and j, key
// padding from its list,
// an explicit mask from the scene's own (n_q, n_k) matrix. Never builds an (n_q, n_k) matrix of its own, so a
// 32k-token causal scene costs O(n) here, not 1 GiB.
#pragma once

#include <cstdint>
#include <vector>

#include "attnscope/scene/scene.h"

namespace attnscope {

class KeyMask {
 public:
  explicit KeyMask(const Scene& scene);

  bool any() const { return kind_ != MaskKind::None || has_padding_; }  // false: every key allowed everywhere
  bool allowed(int query, int key) const {
    if (has_padding_ && (*padding_)[static_cast<std::size_t>(key)]) return false;
    switch (kind_) {
      case MaskKind::Causal: return key <= query && (window_ <= 0 || key > query - window_);
      case MaskKind::Explicit: return (*explicit_)(query, key) != 0;
      case MaskKind::None: break;
    }
    return true;
  }
  // Flags (1 = may attend) of query row `query` for keys [key0, key1) into out[0 .. key1 - key0).
  void fillRow(int query, int key0, int key1, std::uint8_t* out) const;
  // How many keys query row `query` may attend.
  int allowedCount(int query) const;
  // What the rule says of every cell of queries [query0, query1) x keys [key0, key1) at once, so a blocked loop
  // skips a block nobody may attend and masks none of one everybody may. Explicit masks answer Some.
  enum class Block { None, All, Some };
  Block block(int query0, int query1, int key0, int key1) const;

 private:
  MaskKind kind_;
  bool has_padding_;
  const std::vector<std::uint8_t>* padding_;
  const MaskMatrix* explicit_;
  int n_k_;
  int window_;  // Scene::sliding_window (with Causal): 0 none
  std::vector<int> padded_before_;  // (n_k + 1) padded keys among [0, j): the causal row count in O(1)
};

}  // namespace attnscope
