/*
 * itm_resume.S - resuming at a checkpoint of the libitm ABI on x86-64: a
 * leaf that itm_tx.c calls to restart or cancel a transaction.
 *
 * Owns: itm_longjmp(), which loads a checkpoint that itm_entry.S saved
 * (struct itm_jb, itm.h) and continues as if _ITM_beginTransaction returned
 * `code` there. Never: calls anything, or touches memory other than the
 * checkpoint it reads.
 */
        .text

        /* void itm_longjmp(const struct itm_jb *jb, uint32_t code) */
        .globl  itm_longjmp
        .hidden itm_longjmp
        .type   itm_longjmp, @function
        .p2align 4
itm_longjmp:
        .cfi_startproc
        movl    %esi, %eax
        movq    0(%rdi), %rbx
        movq    8(%rdi), %rbp
        movq    16(%rdi), %r12
        movq    24(%rdi), %r13
        movq    32(%rdi), %r14
        movq    40(%rdi), %r15
        movq    48(%rdi), %rsp
        jmp     *56(%rdi)
        .cfi_endproc
        .size   itm_longjmp, .-itm_longjmp

        .section .note.GNU-stack,"",@progbits
