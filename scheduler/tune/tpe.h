// The TPE searcher (see searcher.h). Internal to scheduler/tune: make it with MakeSearcher.
#pragma once

#include <memory>

#include "scheduler/tune/searcher.h"

namespace cumulus::tune {

// REQUIRES: space.Validate() is OK.
Result<std::unique_ptr<Searcher>> MakeTpeSearcher(const SearchSpace& space,
                                                  const SearcherOptions& options);

}  // namespace cumulus::tune
