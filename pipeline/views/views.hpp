#pragma once
// Everything app/ uses of the views, in one include: the shipped views (account_balance,
// daily_totals), the registry that names them and the versions' administration.
#include "pipeline/views/account_balance.hpp"
#include "pipeline/views/admin.hpp"
#include "pipeline/views/daily_totals.hpp"
#include "pipeline/views/registry.hpp"
