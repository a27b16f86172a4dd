/* The subcommand table. Add a command by declaring it here and adding a
 * row to sb_commands[] in commands.c. */
#ifndef SB_COMMANDS_H
#define SB_COMMANDS_H

struct sb_command {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary;
};

extern const struct sb_command sb_commands[];

int cmd_classify(int argc, char **argv);
int cmd_policy(int argc, char **argv);
int cmd_attach(int argc, char **argv);
int cmd_detach(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_status(int argc, char **argv);
int cmd_doctor(int argc, char **argv);
int cmd_audit(int argc, char **argv);
int cmd_pending(int argc, char **argv);
int cmd_approve(int argc, char **argv);
int cmd_deny(int argc, char **argv);
int cmd_watch(int argc, char **argv);

#endif
