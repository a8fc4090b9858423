/* The flame/ library (folding, profiles, rendering) is written concurrently with the plugin.
 * Its entry points are referenced weakly so the plugin links (and fails cleanly at run time with
 * "not built in") while a piece is missing; plugin.mk links libflamecore.a --whole-archive so
 * every piece that exists is bound. Include only from .c files. */
#pragma once
#include "flame/cli.h"
#include "flame/profile.h"
#include "flame/render.h"

#pragma weak flame_cmd_fold
#pragma weak flame_cmd_render
#pragma weak profile_new
#pragma weak profile_free
#pragma weak profile_add_line
#pragma weak profile_total
#pragma weak profile_stacks
#pragma weak profile_write_folded
#pragma weak profile_top_self
#pragma weak render_opts_default
#pragma weak render_svg
#pragma weak export_speedscope
#pragma weak flame_cmd_diff
#pragma weak flame_cmd_merge
