/* flame-render: `docker flame render` as a standalone program (benchmarks, and users who only
 * want to draw folded stacks). Not part of libflamecore.a. */
#include "plugin/cmd.h"

int main(int argc, char **argv)
{
    return flame_cmd_render(argc, argv);
}
