#pragma once
// A declared entity's fields compiled once into validators (docs/entities.md "Field
// types and their rules"; docs/entities.md "Field types"). Each validator turns a decoded
// value into its canonical form, the text PostgreSQL prints for the stored value, which the
// conflict comparison compares and the payload carries; or says which rule it breaks. Pure:
// no I/O, no clock, no third-party includes; generic over the declaration.
#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "pipeline/core/field_type.hpp"
#include "pipeline/core/record.hpp"

namespace tidemark::pipeline {

// A field's value in canonical form, nullopt when absent:
//   text       the text itself
//   integer    bigint::text: no leading zeros, no '+', "0" for "-0"
//   decimal    numeric(p,s)::text: exactly s fraction digits ("2.2500"), no sign on zero
//   timestamp  "YYYY-MM-DDTHH:MM:SS.ffffffZ" in UTC (to_char(value AT TIME ZONE 'UTC',
//              'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'))
//   date       date::text in ISO style, "YYYY-MM-DD"
//   boolean    boolean::text, "true" or "false"
//   json       jsonb::text (pipeline/core/json_value.hpp)
using CanonicalValue = std::optional<std::string>;

using FieldCheck = std::variant<CanonicalValue, Rejection>;

// One declared field's rules, compiled from its spec.
class FieldValidator {
 public:
  explicit FieldValidator(FieldSpec spec);

  const FieldSpec& spec() const { return spec_; }

  // The canonical form of a decoded value (nullopt: the field is absent: no key, JSON null or
  // an empty untyped field), or a Rejection whose detail names the field and the rule
  // ("amount: more than 4 fraction digits in \"1.23456\"").
  FieldCheck check(const std::optional<Field>& field) const;

 private:
  // The rule a present value breaks (without the field's name), or its canonical form.
  std::variant<std::string, Rejection> canonical(const Field& field) const;

  FieldSpec spec_;
};

// The first declared field a record breaks: its index in the plan (the quarantine entry's
// `field` is fields()[field].spec().name) and the rejection, whose detail names it too.
struct FieldFault {
  std::size_t field = 0;
  Rejection rejection;
};

// An entity's declared fields, compiled once, checked in declaration order.
class FieldPlan {
 public:
  explicit FieldPlan(const std::vector<FieldSpec>& specs);

  const std::vector<FieldValidator>& fields() const { return fields_; }

  // One decoded value per declared field, in declaration order, to their canonical forms;
  // the first rejection ends the check. `values` must hold exactly fields().size() values.
  std::variant<std::vector<CanonicalValue>, FieldFault> check(std::span<const std::optional<Field>> values) const;

 private:
  std::vector<FieldValidator> fields_;
};

}  // namespace tidemark::pipeline
