/* Kept only for plugin tests written before tap.h became the one TAP header: include
 * tests/unit/tap.h instead (this file goes once nothing includes it). */
#pragma once
#include "tests/unit/tap.h"
