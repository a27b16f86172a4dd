/* A stand-in for git in the demo (vmtests/demo/demo_loop): the VM has no
 * git, and the demo must not reach a real remote. The kernel judges it by
 * its name and argv like the real one ("git push*"). */
#include <stdio.h>

int main(int argc, char **argv)
{
	int i;

	printf("git (demo stand-in):");
	for (i = 1; i < argc; i++)
		printf(" %s", argv[i]);
	printf(": done\n");
	return 0;
}
