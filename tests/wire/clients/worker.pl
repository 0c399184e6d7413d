#!/usr/bin/perl
# SPDX-License-Identifier: BSD-3-Clause
# A Gearman::Worker (libgearman-client-perl) that reverses its input; exits after N jobs.
use strict;
use warnings;
use Gearman::Worker;

my ($server, $count) = @ARGV;
my $worker = Gearman::Worker->new(job_servers => [$server]);
my $done = 0;
$worker->register_function(reverse => sub { $done++; return scalar reverse($_[0]->arg) });
$worker->work(stop_if => sub { $done >= $count }) while $done < $count;
