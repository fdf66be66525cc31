// The similarity panel's state (panel_similarity.cpp): the metric, the statistics table's columns, cluster order.
#pragma once

namespace attnscope::app {

struct SimilarityState {
  int metric = 0;  // 0 cosine, 1 Jensen-Shannon
  // The statistics table's columns when all of them do not fit the pane: 0 the scores by position, 1 the scores
  // by token (and the type), 2 the statistics (and importance).
  int stats_columns = 0;
  // Heads in UPGMA cluster order (on the metric) in the similarity matrix and the heads grid.
  bool cluster_order = false;
};

}  // namespace attnscope::app
