// shardscope-cli: command-line front end. Subcommands: memory, simulate, run, calibrate, compare, import, trace, gpus, strategies, lessons.
// Usage:
//   shardscope-cli memory                                # the built-in scenario: 2 × H100, DDP, 20 × Linear(2000), Adam
//   shardscope-cli memory assets/scenarios/dp.json --batch 32 --json
//   shardscope-cli simulate --world 16 --link-gbps 25 --json
//   shardscope-cli run --model mlp:3x16 --strategy ddp --batch 8 --backend cpu --json
//   shardscope-cli calibrate --backend cpu --out cpu.json       # then: simulate --device-profile cpu.json
//   shardscope-cli simulate --model gpt2 --strategy single --device-profile h200-torch-2.11
//   shardscope-cli run --model mlp:6x384:relu --strategy single --backend cpu --device-profile cpu.json --simulate-beside
//   SHARDSCOPE_TOKEN=... shardscope-cli run scenario.json --backend cuda --nnodes 2 --node-rank 1 --master node0:29500
//   shardscope-cli run --backend cpu --serve 7000              # viewers: shardscope --connect 127.0.0.1:7000 --token ...
//   shardscope-cli gpus
//   shardscope-cli strategies --json
//   shardscope-cli compare assets/scenarios/ddp.json assets/scenarios/zero1.json --json
//   shardscope-cli import trace.json.gz --out run.sstrace   # also a memory snapshot: import snapshot.pickle --out ...
//   shardscope-cli trace info run.sstrace --json          # also: trace export FILE --chrome OUT --csv OUT, trace check FILE
//   shardscope-cli lessons check --json
// Exit codes (cli/command_suggestion.cpp, kExitCodesHelp, printed by --help): 0 ok, 1 a lesson's claim fails (lessons
// check) or a trace is damaged or cut short (trace check), 2 bad input (arguments, scenario, model config, files, a plan too large or one the backend cannot run), 3 a
// failed run or an internal error, 4 the backend cannot run on this machine (cuda: not built, or no usable GPU).
#include <iostream>
#include <optional>

#include <CLI/CLI.hpp>

#include "cli/calibrate_command.h"
#include "cli/command_suggestion.h"
#include "cli/compare_command.h"
#include "cli/gpus_command.h"
#include "cli/import_command.h"
#include "cli/launch_command.h"
#include "cli/lessons_command.h"
#include "cli/memory_command.h"
#include "cli/run_command.h"
#include "cli/scenario_flags.h"
#include "cli/simulate_command.h"
#include "cli/strategies_command.h"
#include "cli/trace_command.h"
#include "cli/trace_outputs.h"
#include "cli/trace_serving.h"
#include "core/version.h"
#include "exec/backends/backend_factory.h"
#include "exec/cuda_host/tcp_rendezvous.h"
#include "lessons/lesson.h"
#include "pipeline/run_pipeline.h"
#include "trace/file/recording_stamp.h"
#include "trace/file/trace_file_reader.h"
#include "trace/import/import_input.h"

int main(int argc, char** argv) {
  using namespace shardscope;
  CLI::App app{"ShardScope: where GPU memory and time go in DP, DDP, ZeRO and pipeline training"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "shardscope-cli " + std::string(shardscope_version));

  // For the header of a recorded trace (--out): how it was made, as a shell would read it back.
  const std::string command_line = shell_quoted_command_line(std::vector<std::string>(argv, argv + argc));

  cli::ScenarioFlags flags;
  bool json = false;
  auto* memory = app.add_subcommand("memory", "Per-rank memory after each phase, peaks by category");
  flags.add_to(*memory);
  memory->add_flag("--json", json, "Print JSON instead of text");

  cli::ScenarioFlags sim_flags;
  std::string trace_out, chrome_out, csv_out;
  auto* simulate = app.add_subcommand("simulate", "Simulated step time, communication (total, exposed), bubble, per-rank figures");
  sim_flags.add_to(*simulate);
  simulate->add_flag("--json", json, "Print JSON instead of text");
  simulate->add_option("--out", trace_out, "Write the trace (.sstrace) while simulating; the GUI opens it with --trace");
  simulate->add_option("--chrome", chrome_out, "Write a Chrome trace (chrome://tracing, Perfetto)");
  simulate->add_option("--csv", csv_out, "Write the memory series as CSV");

  cli::ScenarioFlags run_flags;
  std::string backend;
  cli::TrainingKnobs knobs;
  auto* run = app.add_subcommand("run", "Execute the plan for real (CPU threads); loss, parameter checksum, measured vs predicted memory");
  run_flags.add_to(*run);
  exec::MultiNodeOptions multinode;
  run->add_option("--backend", backend, "Where to run: cpu (threads) or cuda (GPUs, cuBLAS, NCCL)")->required();
  // Without these three, a torchrun or SLURM launch environment gives them (cli/launch_command.h).
  const auto add_launch_flags = [&multinode](CLI::App* command) {
    command->add_option("--nnodes", multinode.nnodes,
                        "cuda: number of processes (nodes) of the run (default: WORLD_SIZE or SLURM_NTASKS when set)")
        ->check(CLI::Range(1, 65536));
    command->add_option("--node-rank", multinode.node_rank, "cuda: this process's index, 0 = the master (default: RANK or SLURM_PROCID)")
        ->check(CLI::Range(0, 65535));
    command->add_option("--master", multinode.master,
                        "cuda, several processes: HOST:PORT of process 0 (it listens there; default: MASTER_ADDR:MASTER_PORT, "
                        "or the first host of SLURM_JOB_NODELIST)");
  };
  // Whether the command line placed this process itself, rather than leaving it to torchrun's or SLURM's variables.
  const auto launch_flags_given = [](CLI::App* command) {
    return command->count("--nnodes") + command->count("--node-rank") + command->count("--master") > 0;
  };
  add_launch_flags(run);
  run->add_option("--token", multinode.token,
                  "The job token: with --serve, the secret viewers must hold (default: a random one); cuda, several "
                  "nodes: the secret every node shares")
      ->envname(exec::kTokenEnvironmentVariable);
  run->add_option("--lr", knobs.lr, "Learning rate (default: torch's, 1e-3 for Adam/AdamW, 1e-2 for SGD)");
  run->add_option("--initial-loss-scale", knobs.initial_loss_scale,
                  "fp16: the dynamic loss scale to start from (default 65536, GradScaler's); it halves on each overflowed, "
                  "skipped step and doubles after 2000 clean ones");
  cli::ParameterFiles parameter_files;
  run->add_option("--load-params", parameter_files.load,
                  "Initial parameters from a safetensors file (state_dict names: GPT-2 as transformers' GPT2LMHeadModel)");
  run->add_option("--save-params", parameter_files.save,
                  "Write the trained parameters to a safetensors file (state_dict names), after a run that ended ok");
  run->add_flag("--json", json, "Print JSON instead of text");
  run->add_option("--out", trace_out, "Write the trace (.sstrace) while running; the GUI opens it with --trace");
  run->add_option("--chrome", chrome_out, "Write a Chrome trace (chrome://tracing, Perfetto)");
  run->add_option("--csv", csv_out, "Write the memory series as CSV");
  std::string serve_address;
  double serve_linger = cli::kDefaultServeLingerSeconds;
  run->add_option("--serve", serve_address,
                  "Serve the trace live to viewers (shardscope --connect): PORT (on 127.0.0.1) or HOST:PORT; 0 picks a free "
                  "port. Prints 'serving on HOST:PORT token TOKEN' on stderr; the token is --token / SHARDSCOPE_TOKEN or a "
                  "random one");
  bool simulate_beside = false;
  run->add_flag("--simulate-beside", simulate_beside,
                "After the run, simulate the same scenario (with its --device-profile, if any) and print its step beside "
                "the executed median step per kind of time (GEMM, elementwise, optimizer, communication, idle) with the "
                "error of each");
  run->add_option("--serve-linger", serve_linger,
                  "With --serve: seconds to keep serving after the run ends, for viewers still to come (default 5; Ctrl-C "
                  "stops sooner)")
      ->check(CLI::Range(0.0, cli::kMaxServeLingerSeconds));

  std::string calibrate_backend, calibrate_out;
  bool calibrate_quick = false;
  int calibrate_passes = 0;  // 0: the default, 5 (1 with --quick)
  auto* calibrate = app.add_subcommand(
      "calibrate",
      "Measure this machine through our executor's kernels (GEMMs, elementwise, optimizer, GPT-2 blocks, collectives, "
      "overheads) and write a device profile for simulate --device-profile (progress on stderr; a few minutes)");
  calibrate->add_option("--backend", calibrate_backend, "Whose kernels: cpu (threads, OpenBLAS) or cuda")->required();
  calibrate->add_option("--out", calibrate_out, "The profile to write (JSON; format: assets/devices/FORMAT.md)")->required();
  calibrate->add_flag("--quick", calibrate_quick, "Tiny grids: a check that calibration runs, not a profile to predict with");
  calibrate->add_option("--passes", calibrate_passes,
                        "How many times the whole grid is measured, one pass after another; each point's figure is its "
                        "median over the passes, so a machine whose speed drifts over seconds (a shared or virtual one) "
                        "gives every point the same mix of moments (default 5; 1 with --quick)")
      ->check(CLI::Range(1, 50));

  bool launch_json = false;
  int launch_timeout_s = 60;
  auto* launch_check = app.add_subcommand(
      "launch-check",
      "Join the processes of a multi-process run as run --backend cuda does (torchrun, SLURM or flags), without GPUs");
  add_launch_flags(launch_check);
  launch_check->add_option("--token", multinode.token, "The job token every process shares")->envname(exec::kTokenEnvironmentVariable);
  launch_check->add_option("--timeout", launch_timeout_s, "Seconds to wait for every process (default 60)")->check(CLI::Range(1, 3600));
  launch_check->add_flag("--json", launch_json, "Print JSON instead of text");

  std::string compare_a, compare_b;
  auto* compare = app.add_subcommand("compare", "Two runs' peaks per rank and category side by side, and a − b");
  const char* compare_side =
      "Scenario file (.json), trace file (.sstrace; a recorded run's rank files together), profiler trace or memory snapshot";
  compare->add_option("A", compare_a, compare_side)->required();
  compare->add_option("B", compare_b, compare_side)->required();
  compare->add_flag("--json", json, "Print JSON instead of text");

  std::string import_in, import_out;
  auto* import = app.add_subcommand("import", "Convert a torch.profiler trace (.json, .json.gz) or a CUDA memory snapshot "
                                              "(torch.cuda.memory._dump_snapshot pickle) into a trace (.sstrace)");
  import->add_option("FILE", import_in, "Profiler trace or memory snapshot")->required();
  import->add_option("--out", import_out, "The trace to write (.sstrace); the GUI opens it with --trace")->required();

  std::string trace_file, trace_chrome, trace_csv;
  auto* trace = app.add_subcommand("trace", "A recorded trace (.sstrace): what it holds, its exports, whether it is sound");
  trace->require_subcommand(1);
  auto* trace_info = trace->add_subcommand("info", "Header (host, versions, start time, command line), ranks, events, duration, complete or where it is cut");
  trace_info->add_option("FILE", trace_file, "Trace file (.sstrace)")->required();
  trace_info->add_flag("--json", json, "Print JSON instead of text");
  auto* trace_export = trace->add_subcommand("export", "Write the trace's Chrome trace and / or memory CSV");
  trace_export->add_option("FILE", trace_file, "Trace file (.sstrace)")->required();
  trace_export->add_option("--chrome", trace_chrome, "Write a Chrome trace (chrome://tracing, Perfetto)");
  trace_export->add_option("--csv", trace_csv, "Write the memory series as CSV");
  auto* trace_check = trace->add_subcommand("check", "Check framing, every CRC, the header, every event's indices and the End record; exit 1 if damaged or cut short");
  trace_check->add_option("FILE", trace_file, "Trace file (.sstrace)")->required();

  auto* gpus = app.add_subcommand("gpus", "The CUDA GPUs the cuda backend would use, or why there are none");
  gpus->add_flag("--json", json, "Print JSON instead of text");

  auto* strategies = app.add_subcommand("strategies", "The strategies: what each models and the options it takes");
  strategies->add_flag("--json", json, "Print JSON instead of text");

  std::string lessons_dir = lessons::default_lessons_dir();
  std::vector<std::string> lesson_ids;
  auto* lessons_list = app.add_subcommand("lessons", "The guided lessons (assets/lessons): id, title, the question each answers");
  lessons_list->add_flag("--json", json, "Print JSON instead of text");
  lessons_list->add_option("--dir", lessons_dir, "Where the lesson files are (default: assets/lessons)");
  auto* lessons_check = lessons_list->add_subcommand("check", "Run every lesson's scenarios and check its claims; exit 1 if one fails");
  lessons_check->add_option("ids", lesson_ids, "Only these lessons (ids)");
  lessons_check->add_flag("--json", json, "Print JSON instead of text");
  lessons_check->add_option("--dir", lessons_dir, "Where the lesson files are (default: assets/lessons)");

  // --help of every command ends with the exit codes.
  app.footer(cli::kExitCodesHelp);
  for (CLI::App* command : {memory, simulate, run, calibrate, launch_check, compare, import, trace, trace_info, trace_export, trace_check, gpus, strategies, lessons_list, lessons_check})
    command->footer(cli::kExitCodesHelp);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // A mistyped command ("simulte") is named with the nearest command instead of CLI11's "not expected".
    const std::string unknown = cli::unknown_command_message(app, std::vector<std::string>(argv + 1, argv + argc));
    if (!unknown.empty()) {
      std::cerr << "error: " << unknown << "\nRun with --help for more information.\n";
      return 2;
    }
    app.exit(e);
    return 2;
  }

  try {
    if (memory->parsed()) {
      const auto run = cli::run_memory(flags.build());
      if (json) {
        std::cout << cli::memory_json(run) << "\n";
      } else {
        cli::print_memory_text(run, std::cout);
      }
    }
    if (simulate->parsed()) {
      const Scenario scenario = sim_flags.build();
      cli::TraceOutputs outputs({trace_out, chrome_out, csv_out}, command_line);
      const auto run = pipeline::simulate_scenario(scenario, outputs.sink());
      if (json) {
        std::cout << cli::simulate_json(run) << "\n";
      } else {
        cli::print_simulate_text(run, std::cout);
      }
      outputs.finish(std::cerr);
    }
    if (run->parsed()) {
      const Scenario scenario = run_flags.build();
      const bool placed = launch_flags_given(run);
      if (backend == "cuda") {
        cli::resolve_launch(multinode, placed);
      } else {
        if (!placed) cli::refuse_multi_process_launch(backend);
        cli::resolve_launch(multinode, true);
      }
      // --serve: listening (and the token line printed) before the run starts, so viewers see it from its header on.
      std::unique_ptr<cli::TraceServing> serving;
      if (!serve_address.empty()) serving = std::make_unique<cli::TraceServing>(serve_address, multinode.token, serve_linger, std::cerr);
      // The served stream carries the same stamped header (host, start, command line) as the --out file.
      cli::TraceOutputs outputs({trace_out, chrome_out, csv_out}, command_line, serving ? &serving->sink() : nullptr);
      const auto executed =
          cli::run_execute(scenario, backend, knobs, outputs.sink(), multinode, parameter_files, simulate_beside);
      if (json) {
        std::cout << cli::run_json(executed) << "\n";
      } else {
        cli::print_run_text(executed, std::cout);
      }
      outputs.finish(std::cerr);
      if (serving) serving->linger(std::cerr);
      if (!executed.result.ok) {
        std::cerr << "error: " << executed.result.error << "\n";
        return 3;
      }
      if (!parameter_files.save.empty()) cli::save_run_parameters(executed, parameter_files.save);
    }
    if (calibrate->parsed()) cli::run_calibrate(calibrate_backend, calibrate_out, calibrate_quick, calibrate_passes, std::cerr);
    if (launch_check->parsed()) {
      const auto place = cli::resolve_launch(multinode, launch_flags_given(launch_check));
      multinode.join_timeout = std::chrono::seconds(launch_timeout_s);
      return cli::check_launch(multinode, place, launch_json, std::cout, std::cerr);
    }
    if (compare->parsed()) {
      const cli::Comparison comparison{cli::load_run_peaks(compare_a), cli::load_run_peaks(compare_b)};
      if (json) {
        std::cout << cli::compare_json(comparison) << "\n";
      } else {
        cli::print_compare_text(comparison, std::cout);
      }
    }
    if (import->parsed()) cli::import_file(import_in, import_out, command_line, std::cout, std::cerr);
    if (trace_info->parsed()) cli::print_trace_info(trace_file, json, std::cout, std::cerr);
    if (trace_export->parsed()) cli::export_trace(trace_file, trace_chrome, trace_csv, std::cerr);
    if (trace_check->parsed()) return cli::check_trace(trace_file, std::cout, std::cerr);
    if (strategies->parsed()) {
      if (json) {
        std::cout << cli::strategies_json() << "\n";
      } else {
        cli::print_strategies_text(std::cout);
      }
    }
    if (lessons_check->parsed()) {
      if (!cli::check_lessons(lessons_dir, lesson_ids, json, std::cout)) return 1;
    } else if (lessons_list->parsed()) {
      cli::print_lessons(lessons_dir, json, std::cout);
    }
    if (gpus->parsed()) {
      const exec::GpuInventory inventory = exec::detect_gpus();
      if (json) {
        std::cout << cli::gpus_json(inventory) << "\n";
      } else {
        cli::print_gpus_text(inventory, std::cout);
      }
    }
  } catch (const exec::BackendUnavailableError& error) {
    std::cerr << "error: " << error.what() << "\n";
    return 4;
  } catch (const ScenarioError& error) {
    std::cerr << "error: " << error.what() << "\n";
    return 2;
  } catch (const ImportError& error) {  // import's, compare's and the trace commands' foreign files
    std::cerr << "error: " << error.what() << "\n";
    return 2;
  } catch (const TraceFileError& error) {  // compare's and trace's inputs
    std::cerr << "error: " << error.what() << "\n";
    return 2;
  } catch (const lessons::LessonError& error) {
    std::cerr << "error: " << error.what() << "\n";
    return 2;
  } catch (const exec::UnsupportedPlanError& error) {
    std::cerr << "error: " << error.what() << "\n";
    return 2;
  } catch (const std::exception& error) {
    std::cerr << "error: " << error.what() << "\n";
    return 3;
  }
  return 0;
}
