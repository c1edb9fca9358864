#include "connectors/file/record_layout.hpp"

#include "pipeline/core/entity.hpp"
#include "pipeline/core/validate.hpp"

namespace tidemark::connectors::file {

const LayoutPtr& built_in_layout() {
  static const LayoutPtr layout =
      std::make_shared<const pipeline::RecordLayout>(pipeline::record_layout(pipeline::built_in_transaction_entity()));
  return layout;
}

}  // namespace tidemark::connectors::file
