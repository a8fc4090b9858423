/* plugin/run/signals.c sig_ctrlc_step: how many Ctrl-Cs the user pressed, from the SIGINT and
 * plugin-socket counters and when they moved. One press may come as both (a CLI that closes its
 * socket and a SIGINT to the plugin), their halves up to seconds apart on a loaded machine; a
 * second press is what aborts, so it must never be taken for the other half of the first. */
#include "plugin/run/signals.h"
#include "tests/unit/tap.h"

int main(void)
{
    sig_ctrlc c = SIG_CTRLC_INIT;
    is_int(sig_ctrlc_step(&c, 0, 0, 1.0), 0, "nothing: no Ctrl-C");
    is_int(sig_ctrlc_step(&c, 1, 0, 2.0), 1, "a SIGINT: one Ctrl-C");
    /* the CLI's socket close, 0.6 s later (a loaded machine; the old 0.25-s rule counted two,
     * and the run aborted with exit 130 instead of writing the profile) */
    is_int(sig_ctrlc_step(&c, 1, 1, 2.6), 0, "its socket close 0.6 s later: the same Ctrl-C");
    is_int(sig_ctrlc_step(&c, 2, 1, 3.0), 1, "a second SIGINT after the pair: a second Ctrl-C");

    c = (sig_ctrlc)SIG_CTRLC_INIT;
    is_int(sig_ctrlc_step(&c, 0, 1, 5.0), 1, "the socket first: one Ctrl-C");
    is_int(sig_ctrlc_step(&c, 1, 1, 6.5), 0, "then the SIGINT 1.5 s later: the same one");

    c = (sig_ctrlc)SIG_CTRLC_INIT;
    is_int(sig_ctrlc_step(&c, 1, 0, 1.0), 1, "a terminal's Ctrl-C (SIGINT only)");
    is_int(sig_ctrlc_step(&c, 2, 0, 1.5), 1, "pressed again 0.5 s later: a second one (abort)");

    c = (sig_ctrlc)SIG_CTRLC_INIT;
    is_int(sig_ctrlc_step(&c, 1, 1, 1.0), 1, "both in one look: one Ctrl-C");
    is_int(sig_ctrlc_step(&c, 2, 1, 1.1), 0, "a SIGINT 0.1 s after: still the same press");
    is_int(sig_ctrlc_step(&c, 3, 1, 2.0), 1, "then another press: counted");

    c = (sig_ctrlc)SIG_CTRLC_INIT;
    is_int(sig_ctrlc_step(&c, 1, 0, 1.0), 1, "a SIGINT");
    is_int(sig_ctrlc_step(&c, 1, 1, 1.0 + SIG_CTRLC_PAIR_S + 0.1), 1,
           "a socket close long after it: a Ctrl-C of its own");
    is_int(sig_ctrlc_step(&c, 3, 1, 20.0), 1, "two SIGINTs between two looks: one press");
    return tap_done();
}
