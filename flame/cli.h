/* Sub-commands that are pure code: `docker flame fold|render|diff|merge`. Each returns the
 * process exit code and prints its own error line (it is a main() for its verb). */
#pragma once
int flame_cmd_fold(int argc, char **argv);
int flame_cmd_render(int argc, char **argv);
