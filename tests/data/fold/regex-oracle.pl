#!/usr/bin/perl
# Test oracle for tests/unit/test_fold_regex.c: applies, with Perl's own regex engine, the
# regexes stackcollapse-perf.pl uses (as quoted in ../shared/reference/flamegraph-semantics.md
# §1.1) to each input line and prints what they capture, one line per input line. fold.c
# emulates them by hand in linear time; the test checks both agree on random hostile lines.
while (defined($_ = <STDIN>)) {
    chomp;
    my @o;
    if (/^(\S.+?)\s+(\d+)\/*(\d+)*\s+/) { push @o, "H[$1|$2|" . (defined $3 ? $3 : "U") . "]"; }
    else { push @o, "H-"; }
    if (/:\s*(\d+)*\s+(\S+):\s*$/) { push @o, "E[" . (defined $1 ? $1 : "U") . "|$2]"; }
    else { push @o, "E-"; }
    if (/^\s*(\w+)\s*(.+) \((.*)\)/) {
        my ($pc, $f, $m) = ($1, $2, $3);
        push @o, "F[$pc|$f|$m]";
        $f =~ s/\+0x[\da-f]+$//;
        push @o, "O[$f]";
        my $g = $f;
        if ($g !~ m/\.\(.*\)\./) { $g =~ s/\((?!anonymous namespace\)).*//; }
        push @o, "G[$g]";
        push @o, "K" . (($m =~ m/(^\[|vmlinux$)/ && $m !~ /unknown/) ? 1 : 0);
        push @o, "J" . (($m =~ m:/tmp/perf-\d+\.map:) ? 1 : 0);
        push @o, "S[" . join("|", split(/\->/, $f)) . "]";
    } else { push @o, "F-"; }
    print join(" ", @o), "\n";
}
