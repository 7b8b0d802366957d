/**
 * ESLint rule `neverthrow/must-use-result`: a neverthrow `Result` or
 * `ResultAsync` may not be dropped. An expression statement whose value is
 * one (a call whose Result nobody reads, an awaited ResultAsync, a `.map`
 * chain left hanging) loses its `err` side: the failure it carries is never
 * seen. Handle it (return it, branch on `isErr()`, `match`, `unwrapOr`) or
 * give it to something that does; `void` marks a drop that is meant, and
 * wants a comment saying why.
 *
 * Written here because the registry's rules did not fit: eslint-plugin-neverthrow
 * 1.1.4 reads `context.parserServices` and `context.getScope()` (gone in ESLint
 * 9) and counts a Result read through `isErr()` as unhandled, and
 * eslint-plugin-neverthrow-must-use 0.1.2 matches method names in the source
 * text without type information.
 */

// Members every neverthrow Result and ResultAsync has; a type with all of them is one.
const RESULT_MEMBERS = ['andThen', 'mapErr', 'orElse', 'match', 'unwrapOr'];

/** Whether `type` (or any member of its union) is a neverthrow Result or ResultAsync. */
function isResultType(checker, type) {
  const parts = type.isUnion() ? type.types : [type];
  return parts.some((part) => {
    const apparent = checker.getApparentType(part);
    return RESULT_MEMBERS.every((name) => apparent.getProperty(name) !== undefined);
  });
}

/** @type {import('eslint').Rule.RuleModule} */
export const mustUseResult = {
  meta: {
    type: 'problem',
    docs: { description: 'A neverthrow Result or ResultAsync must be used, not dropped.' },
    messages: {
      dropped: 'This {{kind}} is dropped, so its error is never seen: return it, check it, or match on it.',
    },
    schema: [],
  },
  create(context) {
    const services = context.sourceCode.parserServices;
    if (services?.program == null) throw new Error('neverthrow/must-use-result needs type information (parserOptions.projectService).');
    const checker = services.program.getTypeChecker();
    return {
      ExpressionStatement(node) {
        // A directive ('use strict') is an expression statement of a string.
        if (node.directive !== undefined) return;
        // Storing a Result in a variable is not dropping it.
        if (node.expression.type === 'AssignmentExpression') return;
        const type = services.getTypeAtLocation(node.expression);
        if (!isResultType(checker, type)) return;
        const kind = checker.getApparentType(type).getProperty('then') === undefined ? 'Result' : 'ResultAsync';
        context.report({ node, messageId: 'dropped', data: { kind } });
      },
    };
  },
};
