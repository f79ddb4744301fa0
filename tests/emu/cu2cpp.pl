#!/usr/bin/perl
# cu2cpp.pl — turns a .cu file into plain C++ for the CUDA emulator (emu.h):
# every kernel launch `K<<<grid, block[, shm[, stream]]>>>(args);` (K possibly
# templated, args spanning lines) becomes
#   ((void)(shm), emu_launch(stream, (unsigned)(grid), (unsigned)(block), [=] { K(args); }));
# (the shared-memory size still evaluated, so no variable goes unused; the grid and block
# travel with the launch: emu.h, emu_run_grid). Dies, naming the line, when a launch cannot
# be parsed or a `<<<` is left.
#   usage: perl tests/emu/cu2cpp.pl runtime/cuda/cuda_binary.cu > build/.../cuda_binary.emu.cpp
use strict;
use warnings;

my $file = shift // die "usage: cu2cpp.pl FILE.cu\n";
open(my $fh, '<', $file) or die "cu2cpp: $file: $!\n";
my $src = do { local $/; <$fh> };
close $fh;

sub line_of { my ($pos) = @_; return 1 + (substr($src, 0, $pos) =~ tr/\n//); }

# Index just past the bracket matching the opener at $i (same nesting kinds).
sub match_fwd {
    my ($s, $i, $open, $close) = @_;
    my $depth = 0;
    for (my $j = $i; $j < length $s; $j++) {
        my $c = substr($s, $j, 1);
        if ($c eq $open) { $depth++ }
        elsif ($c eq $close) { $depth--; return $j + 1 if $depth == 0 }
    }
    return -1;
}

# Splits at top-level commas (outside (), [], {}, <> is not tracked: config
# expressions do not contain template commas here).
sub split_top {
    my ($s) = @_;
    my (@parts, $depth, $cur);
    $depth = 0; $cur = '';
    for my $c (split //, $s) {
        if ($c =~ /[(\[{]/) { $depth++ }
        elsif ($c =~ /[)\]}]/) { $depth-- }
        if ($c eq ',' && $depth == 0) { push @parts, $cur; $cur = ''; next }
        $cur .= $c;
    }
    push @parts, $cur;
    s/^\s+|\s+$//g for @parts;
    return @parts;
}

my $out = '';
my $pos = 0;
my $n = 0;
while ((my $at = index($src, '<<<', $pos)) >= 0) {
    my $line = line_of($at);
    # kernel name (with template arguments) before <<<
    my $k = $at;
    $k-- while $k > 0 && substr($src, $k - 1, 1) =~ /\s/;
    my $kend = $k;
    if (substr($src, $k - 1, 1) eq '>') {
        my $depth = 0;
        do {
            $k--;
            my $c = substr($src, $k, 1);
            $depth++ if $c eq '>';
            $depth-- if $c eq '<';
        } while ($depth > 0 && $k > 0);
    }
    $k-- while $k > 0 && substr($src, $k - 1, 1) =~ /[A-Za-z0-9_:]/;
    my $kernel = substr($src, $k, $kend - $k);
    die "cu2cpp: $file:$line: no kernel name before <<<\n" unless $kernel =~ /^[A-Za-z_]/;
    my $cfg_end = index($src, '>>>', $at);
    die "cu2cpp: $file:$line: <<< without >>>\n" if $cfg_end < 0;
    my @cfg = split_top(substr($src, $at + 3, $cfg_end - $at - 3));
    die "cu2cpp: $file:$line: launch needs 2 to 4 configuration arguments\n" if @cfg < 2 || @cfg > 4;
    my $stream = @cfg == 4 ? $cfg[3] : '(cudaStream_t)0';
    my $p = $cfg_end + 3;
    $p++ while substr($src, $p, 1) =~ /\s/;
    die "cu2cpp: $file:$line: expected ( after >>>\n" unless substr($src, $p, 1) eq '(';
    my $args_end = match_fwd($src, $p, '(', ')');
    die "cu2cpp: $file:$line: unbalanced parentheses in launch arguments\n" if $args_end < 0;
    my $args = substr($src, $p, $args_end - $p);
    my $q = $args_end;
    $q++ while substr($src, $q, 1) =~ /[ \t]/;
    die "cu2cpp: $file:$line: expected ; after the launch\n" unless substr($src, $q, 1) eq ';';
    my $voids = @cfg > 2 ? "(void)($cfg[2]), " : '';
    $out .= substr($src, $pos, $k - $pos);
    $out .= "($voids" . "emu_launch($stream, (unsigned)($cfg[0]), (unsigned)($cfg[1]), [=] { $kernel$args; }));";
    $pos = $q + 1;
    $n++;
}
$out .= substr($src, $pos);
die "cu2cpp: $file: a <<< remains after rewriting\n" if index($out, '<<<') >= 0;
print "// generated from $file by tests/emu/cu2cpp.pl ($n launches); do not edit\n";
print "#line 1 \"$file\"\n";
print $out;
