#pragma once
// The fields the file decoders deliver: a pipeline::RecordLayout decided once per source from
// the entity it loads, shared by every decoder of that source.
#include <memory>

#include "pipeline/core/record.hpp"

namespace tidemark::connectors::file {

using LayoutPtr = std::shared_ptr<const pipeline::RecordLayout>;

// The built-in transaction entity's layout: transaction_id, source_revision, amount,
// account_id, occurred_at.
const LayoutPtr& built_in_layout();

}  // namespace tidemark::connectors::file
