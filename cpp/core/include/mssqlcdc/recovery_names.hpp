// recovery_names.hpp: the text of every recovery enum, as mssql_cdc.core.recovery_decision's
// Literal types and _native.pyi spell it. The binding converts through these tables only;
// tests/unit checks them against both Python files.
#pragma once

#include <array>

#include "mssqlcdc/enum_names.hpp"
#include "mssqlcdc/recovery.hpp"

namespace mssqlcdc::recovery::names {

// One table per enum, in declaration order (the static_assert below checks it).
inline constexpr std::array<EnumName<Mode>, 2> kMode{{
    {Mode::Full, "full"},
    {Mode::Chunked, "chunked"},
}};

inline constexpr std::array<EnumName<Action>, 3> kAction{{
    {Action::None, "none"},
    {Action::Resnapshot, "resnapshot"},
    {Action::Blocked, "blocked"},
}};

inline constexpr std::array<EnumName<ReuseKind>, 4> kReuseKind{{
    {ReuseKind::None, "none"},
    {ReuseKind::Completion, "completion"},
    {ReuseKind::Open, "open"},
    {ReuseKind::Target, "target"},
}};

inline constexpr std::array<EnumName<StartSource>, 6> kStartSource{{
    {StartSource::Recovering, "recovering"},
    {StartSource::Checkpoint, "checkpoint"},
    {StartSource::StateSnapshot, "state"},
    {StartSource::Bootstrap, "bootstrap"},
    {StartSource::StartingLsn, "starting_lsn"},
    {StartSource::None, "none"},
}};

inline constexpr std::array<EnumName<DurationGuard>, 3> kDurationGuard{{
    {DurationGuard::Warn, "warn"},
    {DurationGuard::Refuse, "refuse"},
    {DurationGuard::Off, "off"},
}};

inline constexpr std::array<EnumName<DecisionError>, 3> kErrorKind{{
    {DecisionError::None, "none"},
    {DecisionError::DataLoss, "data_loss"},
    {DecisionError::InvalidArgument, "invalid_argument"},
}};

inline constexpr std::array<EnumName<Step>, 5> kStep{{
    {Step::WriteFullOpen, "write_full_open"},
    {Step::TakeSnapshot, "take_snapshot"},
    {Step::OpenChunked, "open_chunked"},
    {Step::WriteEvent, "write_event"},
    {Step::ClearRecovering, "clear_recovering"},
}};

static_assert(in_declaration_order(kMode) && in_declaration_order(kAction) && in_declaration_order(kReuseKind) &&
              in_declaration_order(kStartSource) && in_declaration_order(kDurationGuard) &&
              in_declaration_order(kErrorKind) && in_declaration_order(kStep));

}  // namespace mssqlcdc::recovery::names
