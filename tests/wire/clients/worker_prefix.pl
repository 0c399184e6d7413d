#!/usr/bin/perl
# SPDX-License-Identifier: BSD-3-Clause
# A Gearman::Worker with a prefix (its functions are PREFIX, a TAB, then the name: Perl's
# namespaces) that reverses its input; exits after N jobs.
use strict;
use warnings;
use Gearman::Worker;

my ($server, $prefix, $count) = @ARGV;
my $worker = Gearman::Worker->new(job_servers => [$server], prefix => $prefix);
my $done = 0;
$worker->register_function(reverse => sub { $done++; return scalar reverse($_[0]->arg) });
$worker->work(stop_if => sub { $done >= $count }) while $done < $count;
